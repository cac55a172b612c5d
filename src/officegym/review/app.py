"""The review web UI: FastAPI routes rendering Jinja2 templates, plain HTML forms, no JS build.

Pages: the queue (filters by status, reason, category; counts), an item (task, trajectory turn
by turn, state diff, reward breakdown, K-sample summary, actions), the audit log, exports. Forms
post and redirect (post-redirect-get), so a page reload never repeats an action. A small JSON API
under /api serves pipelines. Keyboard shortcuts are a few lines of inline script.

Client input never causes a 500: bodies are bounded, numbers checked against SQLite's range, the
API body validated by pydantic (`guard.py` has the request hygiene and the Host check).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ValidationError

from officegym.review import council_view, views
from officegym.review.actions import ActionError, apply_action, correction_text, item_env, item_task
from officegym.review.export import EXPORT_FILES, build_export
from officegym.review.flag import REASONS
from officegym.review.guard import (
    AllowedHosts,
    BodyTooLargeError,
    CloseOnError,
    HostCheck,
    parse_int,
    read_body,
)
from officegym.review.replay import CorrectionError
from officegym.review.store import (
    ACTIONS,
    INT64_MAX,
    REJECT_REASONS,
    STATUSES,
    Filters,
    ItemNotFoundError,
    Store,
)
from officegym.review.worlds import Environments

TEMPLATES = Path(__file__).parent / "templates"
REVIEWER_COOKIE = "officegym_reviewer"
PAGE_SIZE = 50
MAX_PAGE = INT64_MAX // PAGE_SIZE  # the page's offset must fit SQLite's 64 bits
DONE = {"accept": "Accepted.", "reject": "Rejected.", "skip": "Skipped.", "note": "Note saved.", "correct": "Correction saved."}


def default_reviewer() -> str:
    return os.environ.get("OFFICEGYM_REVIEWER") or os.environ.get("USER") or "reviewer"


class DecisionIn(BaseModel):
    """A decision posted to the JSON API (unknown keys are ignored)."""

    action: str = ""
    reviewer: str | None = None
    reason: str | None = None
    note: str | None = None
    calls: str | list[Any] | dict[str, Any] | None = None  # JSON text, a list of calls, or one call
    check_only: bool = False


async def read_form(request: Request) -> dict[str, str]:
    """An url-encoded form body (what the pages' forms send), as a dict of its last values
    (BodyTooLargeError over 1 MiB)."""
    body = await read_body(request)
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def create_app(store: Store, envs: Environments | None = None, reviewer: str | None = None, title: str = "officegym review",
               allowed_hosts: AllowedHosts | None = None) -> FastAPI:
    """The review app over `store`; `envs` builds the environments corrections are replayed in.
    `allowed_hosts` (`AllowedHosts.for_bind(host, port)` for a server) refuses other Host
    headers; None checks none (an app mounted behind something that does)."""
    envs = envs or Environments()
    app = FastAPI(title=title, docs_url="/api/docs", redoc_url=None, openapi_url="/api/openapi.json")
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["pretty"] = views.pretty_json
    templates.env.filters["fmt"] = _fmt
    templates.env.filters["code"] = views.inline_code
    app.state.store = store
    app.state.envs = envs

    @app.middleware("http")
    async def same_origin(request: Request, call_next):
        # The UI has no login; at least refuse form posts that another site's page makes a
        # browser send (browsers add Origin to cross-site POSTs).
        origin = request.headers.get("origin")
        if request.method == "POST" and origin and _netloc(origin) != request.headers.get("host"):
            return JSONResponse({"detail": "cross-origin POST refused"}, status_code=403)
        return await call_next(request)

    app.add_middleware(CloseOnError)
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, allowed=allowed_hosts)  # added last: runs first

    @app.exception_handler(ItemNotFoundError)
    async def not_found(request: Request, exc: ItemNotFoundError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": str(exc)}, status_code=404)
        return page(request, "error.html", {"message": str(exc)}, 404)

    def who(request: Request, form: dict[str, str] | None = None) -> str:
        name = (form or {}).get("reviewer") or request.cookies.get(REVIEWER_COOKIE) or reviewer or default_reviewer()
        return name.strip()[:80]

    def filters_of(params: Any) -> Filters:
        return Filters(
            status=params.get("status") or None,
            reason=params.get("reason") or None,
            category=params.get("category") or None,
        )

    def carry(f: Filters) -> str:
        q = {k: v for k, v in (("status", f.status), ("reason", f.reason), ("category", f.category)) if v}
        return ("?" + urlencode(q)) if q else ""

    def page(request: Request, name: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
        context = {"reviewer": who(request), "title": title, **context}
        return templates.TemplateResponse(request, name, context, status_code=status)

    @app.get("/", include_in_schema=False)
    def home() -> RedirectResponse:
        return RedirectResponse("/queue", status_code=303)

    def refuse(request: Request, message: str, status: int) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"detail": message}, status_code=status)
        return page(request, "error.html", {"message": message}, status)

    @app.get("/queue", response_class=HTMLResponse)
    def queue(request: Request) -> Response:
        f = filters_of(request.query_params)
        page_no = max(1, parse_int(request.query_params.get("page")) or 1)  # not a number: the first page
        if page_no > MAX_PAGE:
            return refuse(request, f"no page {request.query_params['page'][:40]}: pages go up to {MAX_PAGE}", 400)
        items = store.list(f, limit=PAGE_SIZE, offset=(page_no - 1) * PAGE_SIZE)
        total = store.count(f)
        counts = store.counts()
        return page(request, "queue.html", {
            "items": items, "filters": f, "counts": counts, "total": total, "page": page_no,
            "pages": max(1, -(-total // PAGE_SIZE)), "statuses": STATUSES, "reasons": REASONS,
            "categories": sorted(counts["category"]), "carry": carry(f),
            "done": DONE.get(request.query_params.get("done", "")),
        })

    def item_page(request: Request, item_id: int, status: int = 200, **extra: Any) -> HTMLResponse:
        item = store.get(item_id)
        f = filters_of(request.query_params)
        prev_id, next_id = store.neighbours(item_id, f)
        row = item["row"]
        task = env = None
        try:
            task = item_task(item)
            task_info = {"category": task.category, "difficulty": task.metadata.get("difficulty"),
                         "template": task.metadata.get("template"), "ground_truth": [c.to_nemo() for c in task.ground_truth]}
            env = item_env(envs, item)
        except ActionError as exc:
            task_info = {"error": str(exc), "ground_truth": []}
        except CorrectionError:
            env = None  # no environment: the page shows what the row holds
        decisions = store.decisions(item_id)
        corrections = [d for d in decisions if d["action"] == "correct" and d["payload"]]
        council_part = council_view.council_view(row, task, env)
        graded = views.graded_view(row)
        kind = "council" if council_part is not None else ("role" if graded is not None else "workplace")
        calls_value = extra.pop("calls_text", None)
        if calls_value is None:
            if corrections and kind == "workplace":
                calls_value = views.calls_text(corrections[-1]["payload"]["calls"])
            elif corrections:  # the correction as the reviewer typed it: the answer, or the decision
                calls_value = views.calls_text(corrections[-1]["payload"].get("typed") or corrections[-1]["payload"]["calls"][-1:])
            else:
                calls_value = correction_text(envs, item)
        siblings = store.siblings(item)
        samples = item["grp"].get("samples", [])
        context = {
            "item": item, "row": row, "task": task_info, "prompt": views.prompt_messages(row),
            "turns": views.trajectory_turns(row), "diff": views.diff_tables(views.verdict_of(row)),
            "breakdown": views.reward_breakdown(row), "decisions": decisions, "siblings": siblings, "samples": samples,
            "histogram": views.histogram([s.get("reward") for s in samples]),
            "invalid_fragments": views.og_of(row).get("invalid_fragments") or [],
            "reject_reasons": REJECT_REASONS, "reasons": REASONS, "blind": request.query_params.get("blind") == "1",
            "prev_id": prev_id, "next_id": next_id, "carry": carry(f), "calls_text": calls_value,
            "kind": kind, "council": council_part, "graded": graded,
            "done": DONE.get(request.query_params.get("done", "")), "check": None, "error": None,
            **extra,
        }
        return page(request, "item.html", context, status)

    @app.get("/items/{item_id}", response_class=HTMLResponse)
    def item(request: Request, item_id: int) -> HTMLResponse:
        return item_page(request, item_id)

    @app.post("/items/{item_id}/{action}", response_class=HTMLResponse)
    async def act(request: Request, item_id: int, action: str) -> Response:
        try:
            form = await read_form(request)
        except BodyTooLargeError as exc:
            return item_page(request, item_id, 413, error=str(exc))
        if action not in ACTIONS:
            return item_page(request, item_id, 404, error=f"unknown action {action!r}")
        reviewer = who(request, form)
        save = form.get("mode", "save") != "check"
        try:
            store.get(item_id)
            result = apply_action(store, envs, item_id, action, reviewer, form.get("reason"), form.get("note"),
                                  form.get("calls"), save=save)
        except ItemNotFoundError:
            return HTMLResponse("<p>no such item</p>", status_code=404)
        except CorrectionError as exc:
            return item_page(request, item_id, 422, error=f"Correction refused: {exc}", calls_text=form.get("calls"))
        except ActionError as exc:
            return item_page(request, item_id, 400, error=str(exc), calls_text=form.get("calls"))
        if action == "correct" and not save:
            return item_page(request, item_id, 200, check=result.check, calls_text=form.get("calls"))
        f = filters_of({k[2:]: v for k, v in form.items() if k.startswith("f_")})
        if action in ("note", "correct"):
            target = f"/items/{item_id}"
        else:
            nxt = store.next_pending(item_id, f)
            target = f"/items/{nxt}" if nxt is not None else "/queue"
        query = {k: v for k, v in (("status", f.status), ("reason", f.reason), ("category", f.category)) if v}
        query["done"] = action
        response = RedirectResponse(f"{target}?{urlencode(query)}", status_code=303)
        response.set_cookie(REVIEWER_COOKIE, reviewer, samesite="lax", max_age=30 * 86400)
        return response

    @app.post("/reviewer", include_in_schema=False)
    async def set_reviewer(request: Request) -> Response:
        try:
            form = await read_form(request)
        except BodyTooLargeError as exc:
            return refuse(request, str(exc), 413)
        name = (form.get("reviewer") or "").strip()[:80]
        back = form.get("back") or "/queue"
        response = RedirectResponse(back if back.startswith("/") and not back.startswith("//") else "/queue", status_code=303)
        if name:
            response.set_cookie(REVIEWER_COOKIE, name, samesite="lax", max_age=30 * 86400)
            store.log(name, "sign_in")
        return response

    @app.get("/audit", response_class=HTMLResponse)
    def audit(request: Request) -> Response:
        actor = request.query_params.get("actor") or None
        item_id = parse_int(request.query_params.get("item"))  # not a number: no item filter
        if item_id is not None and not 0 <= item_id <= INT64_MAX:
            return refuse(request, "the item filter must be an item id", 400)
        entries = store.audit(limit=500, actor=actor, item_id=item_id)
        return page(request, "audit.html", {"entries": entries, "actor": actor, "item_id": item_id})

    @app.get("/export", response_class=HTMLResponse)
    def export_page(request: Request) -> HTMLResponse:
        return page(request, "export.html", {"files": EXPORT_FILES, "counts": store.counts()})

    @app.get("/export/{name}")
    def export_file(request: Request, name: str) -> Response:
        if name not in EXPORT_FILES:
            return JSONResponse({"detail": f"no export named {name!r}"}, status_code=404)
        bundle = build_export(store, envs)
        store.log(who(request), "export_download", {"file": name})
        media = "application/xml" if name.endswith(".xml") else "application/json"
        return Response(bundle.files[name], media_type=media,
                        headers={"content-disposition": f'inline; filename="{name}"'})

    # -- JSON API -------------------------------------------------------------------------------

    @app.get("/api/items")
    def api_items(request: Request) -> JSONResponse:
        f = filters_of(request.query_params)
        limit = parse_int(request.query_params.get("limit") or "100")
        offset = parse_int(request.query_params.get("offset") or "0")
        if limit is None or offset is None:
            return JSONResponse({"detail": "limit and offset must be integers"}, status_code=422)
        if offset > INT64_MAX:
            return JSONResponse({"detail": f"offset must be at most {INT64_MAX}"}, status_code=422)
        limit, offset = min(1000, max(1, limit)), max(0, offset)
        return JSONResponse({"items": store.list(f, limit, offset), "total": store.count(f)})

    @app.get("/api/items/{item_id}")
    def api_item(item_id: int) -> JSONResponse:
        try:
            item = store.get(item_id)
        except ItemNotFoundError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=404)
        return JSONResponse({**item, "decisions": store.decisions(item_id)})

    @app.get("/api/counts")
    def api_counts() -> JSONResponse:
        return JSONResponse(store.counts())

    @app.post("/api/items/{item_id}/decisions",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": DecisionIn.model_json_schema()}}}})
    async def api_decide(request: Request, item_id: int) -> JSONResponse:
        try:
            body = DecisionIn.model_validate_json(await read_body(request) or b"{}")
        except BodyTooLargeError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=413)
        except ValidationError as exc:
            errors = exc.errors(include_url=False, include_input=False, include_context=False)
            return JSONResponse({"detail": [{**e, "loc": ["body", *e["loc"]]} for e in errors]}, status_code=422)
        try:
            store.get(item_id)
            result = apply_action(store, envs, item_id, body.action, body.reviewer or who(request),
                                  body.reason, body.note, body.calls, save=not body.check_only)
        except ItemNotFoundError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=404)
        except CorrectionError as exc:
            return JSONResponse({"detail": f"correction refused: {exc}"}, status_code=422)
        except ActionError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=400)
        out: dict[str, Any] = {"decision_id": result.decision_id, "status": store.get(item_id)["status"]}
        if result.check is not None:
            out["check"] = result.check.to_dict()
        return JSONResponse(out)

    return app


def _netloc(origin: str) -> str | None:
    try:
        return urlparse(origin).netloc
    except ValueError:  # e.g. "http://[": an Origin no page of ours sends
        return None


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)
