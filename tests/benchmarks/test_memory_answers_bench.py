"""benchmarks/memory_answers.py measures what it says: its data keeps its promises, and a
run through the logging proxy sees pruning, evidence and replies as they happened.

The end-to-end test drives the real `newt -p --json -c` against tests/support/fake_openai.py
(it echoes "ok: <last user message>", so a reply carries whatever evidence the request
put before the question) with a context small enough to prune.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI
from tests.support.paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import memory_answers as bench


def test_the_sets_are_disjoint_and_paraphrases_avoid_the_facts_words() -> None:
    data = bench.load_data()
    assert all(len(data.sets[name]) >= 8 for name in bench.SETS)
    ids = [f.id for name in bench.SETS for f in data.sets[name]]
    assert len(ids) == len(set(ids))
    fact = data.sets["test"][0]
    broken = bench.Data(
        {
            "dev": [],
            "test": [bench.Fact(fact.id, fact.kind, fact.statements, "", fact.question)],
            "holdout": [],
            "holdout2": [],
            "holdout3": [],
        },
        data.carriers,
        data.fillers,
    )
    with pytest.raises(ValueError, match="paraphrase repeats"):
        bench.check_data(broken)


def test_a_seed_plans_the_same_run_and_plants_near_misses_together() -> None:
    data = bench.load_data()
    first = bench.plan_facts(data, "test", 3, 6)
    assert [(p.fact.id, p.value, p.message) for p in first] == [
        (p.fact.id, p.value, p.message) for p in bench.plan_facts(data, "test", 3, 6)
    ]
    groups = [p for p in first if p.fact.group]
    assert len(groups) == 2 and groups[0].siblings == (groups[1].value,)
    assert any(p.paraphrased for p in first) and not all(p.paraphrased for p in first)
    assert len({p.value.lower() for p in first}) == len(first)


def test_locate_tells_evidence_record_and_resident_turns_apart() -> None:
    known = {"My code is 4417.", "Noted."}
    question = "What is my code?"
    evidence = {"role": "user", "content": f"Retained evidence:\n- [t1] code 4417\n\n{question}"}
    record = {"role": "user", "content": "Summary: the code is 4417."}
    resident = {"role": "user", "content": "My code is 4417."}
    system = {"role": "system", "content": "You are newt."}
    assert bench.locate({"messages": [system, evidence]}, "4417", question, known) == "evidence"
    assert bench.evidence_rank({"messages": [system, evidence]}, "4417") == 1
    plain = {"role": "user", "content": question}
    assert bench.locate({"messages": [system, record, plain]}, "4417", question, known) == (
        "record"
    )
    assert bench.locate({"messages": [system, resident, plain]}, "4417", question, known) == (
        "resident"
    )
    assert bench.locate({"messages": [system, plain]}, "4417", question, known) is None
    assert not bench.mentions("44170", "4417") and bench.mentions("It is 4417.", "4417")
    # a time with am/pm glued on names it; another time does not
    assert bench.mentions("at 5:40pm.", "5:40") and bench.mentions("at 5:40 p.m.", "5:40")
    assert not bench.mentions("at 5:405", "5:40") and not bench.mentions("15:40", "5:40")
    assert not bench.mentions("at 5:40pmx", "5:40")
    # strict scoring: a reply naming a near-miss value too counts as wrong
    assert bench.carries("It is 4417.", "4417", ["9941"])
    assert not bench.carries("It is 4417 or 9941.", "4417", ["9941"])


@pytest.mark.parametrize("mode", ["on", "off"])
async def test_a_run_prunes_every_fact_then_asks(
    mode: str, fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    # a 2,048-token window: small enough that the facts are pruned and come back by recall
    fake_openai.n_ctx = 2048
    proxy = bench.LoggingProxy(fake_openai.base_url.removesuffix("/v1"))
    await proxy.start()
    try:
        result = await bench.one_run(
            proxy,
            bench.load_data(),
            set_name="dev",
            design="first",
            mode=mode,
            seed=1,
            facts=2,
            config_values=[],
            verbose=False,
        )
    finally:
        await proxy.close()
    kinds = [t.kind for t in result.turns]
    assert kinds[:2] == ["fact", "fact"] and kinds[-2:] == ["question", "question"]
    assert "filler" in kinds and any(t.compacted for t in result.turns)
    assert all(a.pruned for a in result.answers)
    # the fake echoes the request's last message: evidence reaches the reply only with recall
    if mode == "on":
        direct = [a for a in result.answers if not a.paraphrased]
        # ("resident" when the first question's echoed capsules, brought by recall,
        # already held this fact: with the meaning path the two wifi facts come
        # back together)
        assert direct and all(a.value in a.reply for a in direct)
        assert all(a.where in ("evidence", "resident") for a in direct)
        # (near misses are no longer left out of recall: the echo may name the
        # other harbor's code too, which strict scoring counts as wrong)
        assert all(a.reply_ok == (not a.siblings_in_reply) for a in direct)
    else:
        assert all(a.where != "evidence" for a in result.answers)
    assert all(t.wall_s > 0 for t in result.turns)
