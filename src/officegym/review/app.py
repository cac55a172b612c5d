"""The review web UI: FastAPI routes rendering Jinja2 templates, plain HTML forms, no JS build.

Pages: the queue (filters by status, reason, category; counts), an item (task, trajectory turn
by turn, state diff, reward breakdown, K-sample summary, actions), the audit log, exports. Forms
post and redirect (post-redirect-get), so a page reload never repeats an action. A small JSON API
under /api serves pipelines. Keyboard shortcuts are a few lines of inline script.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlparse

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from officegym.review import views
from officegym.review.actions import ActionError, apply_action, item_task
from officegym.review.export import EXPORT_FILES, build_export
from officegym.review.flag import REASONS
from officegym.review.replay import CorrectionError
from officegym.review.store import ACTIONS, REJECT_REASONS, STATUSES, Filters, ItemNotFoundError, Store
from officegym.review.worlds import Environments

TEMPLATES = Path(__file__).parent / "templates"
REVIEWER_COOKIE = "officegym_reviewer"
MAX_FORM_BYTES = 1 << 20
PAGE_SIZE = 50
DONE = {"accept": "Accepted.", "reject": "Rejected.", "skip": "Skipped.", "note": "Note saved.", "correct": "Correction saved."}


def default_reviewer() -> str:
    return os.environ.get("OFFICEGYM_REVIEWER") or os.environ.get("USER") or "reviewer"


async def read_form(request: Request) -> dict[str, str]:
    """An url-encoded form body (what the pages' forms send), as a dict of its last values."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise ActionError("the form is too large")
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def create_app(store: Store, envs: Environments | None = None, reviewer: str | None = None, title: str = "officegym review") -> FastAPI:
    """The review app over `store`; `envs` builds the environments corrections are replayed in."""
    envs = envs or Environments()
    app = FastAPI(title=title, docs_url="/api/docs", redoc_url=None, openapi_url="/api/openapi.json")
    templates = Jinja2Templates(directory=str(TEMPLATES))
    templates.env.filters["pretty"] = views.pretty_json
    templates.env.filters["fmt"] = _fmt
    app.state.store = store
    app.state.envs = envs

    @app.middleware("http")
    async def same_origin(request: Request, call_next):
        # The UI has no login; at least refuse form posts that another site's page makes a
        # browser send (browsers add Origin to cross-site POSTs).
        origin = request.headers.get("origin")
        if request.method == "POST" and origin and urlparse(origin).netloc != request.headers.get("host"):
            return JSONResponse({"detail": "cross-origin POST refused"}, status_code=403)
        return await call_next(request)

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

    @app.get("/queue", response_class=HTMLResponse)
    def queue(request: Request) -> HTMLResponse:
        f = filters_of(request.query_params)
        try:
            page_no = max(1, int(request.query_params.get("page") or 1))
        except ValueError:
            page_no = 1
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
        try:
            task = item_task(item)
            task_info = {"category": task.category, "difficulty": task.metadata.get("difficulty"),
                         "template": task.metadata.get("template"), "ground_truth": [c.to_nemo() for c in task.ground_truth]}
        except ActionError as exc:
            task_info = {"error": str(exc), "ground_truth": []}
        decisions = store.decisions(item_id)
        corrections = [d for d in decisions if d["action"] == "correct" and d["payload"]]
        calls_value = extra.pop("calls_text", None)
        if calls_value is None:
            calls_value = (views.calls_text(corrections[-1]["payload"]["calls"]) if corrections
                           else views.ground_truth_text(row))
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
        except ActionError as exc:
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
        form = await read_form(request)
        name = (form.get("reviewer") or "").strip()[:80]
        back = form.get("back") or "/queue"
        response = RedirectResponse(back if back.startswith("/") and not back.startswith("//") else "/queue", status_code=303)
        if name:
            response.set_cookie(REVIEWER_COOKIE, name, samesite="lax", max_age=30 * 86400)
            store.log(name, "sign_in")
        return response

    @app.get("/audit", response_class=HTMLResponse)
    def audit(request: Request) -> HTMLResponse:
        actor = request.query_params.get("actor") or None
        item_q = request.query_params.get("item")
        item_id = int(item_q) if item_q and item_q.isdigit() else None
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
        try:
            limit = min(1000, max(1, int(request.query_params.get("limit") or 100)))
            offset = max(0, int(request.query_params.get("offset") or 0))
        except ValueError:
            return JSONResponse({"detail": "limit and offset must be integers"}, status_code=422)
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

    @app.post("/api/items/{item_id}/decisions")
    async def api_decide(request: Request, item_id: int) -> JSONResponse:
        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            return JSONResponse({"detail": "the body must be a JSON object"}, status_code=422)
        if not isinstance(body, dict):
            return JSONResponse({"detail": "the body must be a JSON object"}, status_code=422)
        try:
            store.get(item_id)
            result = apply_action(store, envs, item_id, str(body.get("action", "")), str(body.get("reviewer") or who(request)),
                                  body.get("reason"), body.get("note"), body.get("calls"), save=not body.get("check_only"))
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


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)
