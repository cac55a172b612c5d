"""sft.token_weights: a loss weight per kind of assistant token (the tool's name, argument values,
the call's structure, answer text), and SFT's loss as the weighted mean."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")


def test_sft_weights_the_name_tokens_and_the_loss_is_their_weighted_mean(tmp_path, make_cfg, tiny_model_dir,
                                                                          workplace_tasks, tiny_world_dir):
    from officegym.train.config_files import ConfigError
    from officegym.train.data import make_environment
    from officegym.train.modeling import load_train_model, token_renderer
    from officegym.train.sft import build_examples, conversation_batches, nll_sum

    common = [f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}",
              "data.val_fraction=0.25"]
    plain = make_cfg("sft", tmp_path / "a", *common)
    weighted = make_cfg("sft", tmp_path / "b", *common, "sft.token_weights={tool_name: 4.0}")
    tm = load_train_model(plain.model, plain.lora)
    renderer = token_renderer(tm, plain)
    env = make_environment(plain.data)
    a = build_examples(plain, renderer, env)[0][0]
    b = build_examples(weighted, renderer, env)[0][0]
    assert a.input_ids == b.input_ids and set(a.loss_mask) == {0, 1}
    assert [m > 0 for m in a.loss_mask] == [m > 0 for m in b.loss_mask]  # the same tokens trained
    named = [i for i, m in zip(b.input_ids, b.loss_mask) if m == 4.0]
    assert renderer.tokenizer.decode(named) == "email_send_email"  # the one call's name, nothing else

    batch = conversation_batches([b], 1, int(renderer.pad_id), tm.device, False, None)[0]
    with torch.no_grad():
        nll, weight = nll_sum(tm, batch)
        plain_nll, n = nll_sum(tm, conversation_batches([a], 1, int(renderer.pad_id), tm.device, False, None)[0])
    assert n == sum(a.loss_mask) and weight == pytest.approx(n + 3 * len(named))
    assert float(nll) > float(plain_nll)  # the name tokens' loss counted four times

    with pytest.raises(ConfigError, match="token_weights"):
        make_cfg("sft", tmp_path / "c", *common, "sft.token_weights={tool_names: 4.0}")


def test_a_weighted_sft_step_logs_tokens_trained_not_their_weight(tmp_path, make_cfg, tiny_model_dir, workplace_tasks,
                                                                  tiny_world_dir):
    import json

    from officegym.train.sft import train_sft

    common = [f"model.name={tiny_model_dir}", f"data.tasks={workplace_tasks}", f"data.world={tiny_world_dir}",
              "sft.max_steps=1", "sft.batch_size=3", "sft.micro_batch_size=3", "data.val_fraction=0.25"]
    for name, extra in (("plain", []), ("weighted", ["sft.token_weights={tool_name: 4.0, call_structure: 0.25}"])):
        train_sft(make_cfg("sft", tmp_path / name, *common, *extra))
    plain, weighted = (json.loads((tmp_path / n / "metrics.jsonl").read_text().splitlines()[0]) for n in ("plain", "weighted"))
    assert weighted["train/trained_tokens"] == plain["train/trained_tokens"] > 0
    assert weighted["train/loss"] > 0 and weighted["train/loss"] != pytest.approx(plain["train/loss"])
