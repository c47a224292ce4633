"""digests.filters: the filter syntax, matching and wording, as tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from digests.filters import Filter, FilterSyntaxError, Verdict
from digests.models import Episode


def ep(headline: str, summary: str = "", transcript: str = "") -> Episode:
    return Episode(
        guid="g1",
        show="PyTorch",
        title=f"PyTorch: {headline}",
        headline=headline,
        summary=summary,
        published_at=datetime(2026, 10, 5, 13, 0, tzinfo=UTC),
        transcript=transcript,
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("inductor", Filter(any_of=("inductor",))),
        ('inductor "flex attention" -rocm', Filter(("inductor", "flex attention"), (), ("rocm",))),
        ("fsdp, dtensor", Filter(any_of=("fsdp", "dtensor"))),
        ("+cuda +graphs", Filter(all_of=("cuda", "graphs"))),
        ("(fsdp) Fsdp FSDP.", Filter(any_of=("fsdp",))),
        ('"flex   attention"', Filter(any_of=("flex attention",))),
        ("", Filter()),
    ],
)
def test_parse(text: str, expected: Filter) -> None:
    assert Filter.parse(text) == expected


@pytest.mark.parametrize("text", ['"flex attention', "+", "- ", 'inductor +""'])
def test_parse_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(FilterSyntaxError):
        Filter.parse(text)


@pytest.mark.parametrize(
    "text", ["inductor", 'inductor "flex attention" -rocm', "+cuda -mps x", ""]
)
def test_terms_and_unparse_read_back_to_the_same_filter(text: str) -> None:
    f = Filter.parse(text)
    assert Filter.from_terms(f.terms()) == f
    assert Filter.parse(f.unparse()) == f


E = ep("Flex Attention on MPS", "Inductor kernels get faster.", "ROCm builds are next.")


@pytest.mark.parametrize(
    ("text", "verdict", "term"),
    [
        ("", Verdict.MATCHED, None),
        ("inductor", Verdict.MATCHED, "inductor"),
        ("kernel", Verdict.MATCHED, "kernel"),  # at a word start: kernels
        ("ernel", Verdict.NO_TERM, None),  # not inside a word
        ('"flex attention"', Verdict.MATCHED, "flex attention"),
        ('"attention flex"', Verdict.NO_TERM, None),
        ("autograd inductor", Verdict.MATCHED, "inductor"),
        ("inductor -rocm", Verdict.EXCLUDED, "rocm"),
        ("+mps inductor", Verdict.MATCHED, "inductor"),
        ("+cuda inductor", Verdict.MISSING_REQUIRED, "cuda"),
        ("-cuda", Verdict.MATCHED, None),
        ("autograd", Verdict.NO_TERM, None),
    ],
)
def test_check_says_which_term_decided(text: str, verdict: Verdict, term: str | None) -> None:
    check = Filter.parse(text).check(E)
    assert (check.verdict, check.term) == (verdict, term)
    assert check.matched is (verdict is Verdict.MATCHED)


def test_extra_text_counts_pr_titles_and_labels() -> None:
    f = Filter.parse("+dynamo")
    assert not f.matches(E)
    assert f.matches(E, extra=["[dynamo] Guard on tensor subclasses", "module: dynamo"])


def test_keywords_as_stored_today_are_any_of_and_keep_their_signs() -> None:
    # A stored keyword "-rocm" was a literal word before filters existed; nothing lost.
    f = Filter.from_keywords(["fsdp", "-rocm", "fsdp"])
    assert f == Filter(any_of=("fsdp", "-rocm"))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "every episode"),
        ("inductor", "mentions inductor"),
        ('inductor "flex attention"', "mentions inductor or “flex attention”"),
        ("a b c", "mentions a, b or c"),
        (
            "inductor +cuda +graphs -rocm",
            "mentions inductor, must mention cuda and graphs, never rocm",
        ),
    ],
)
def test_describe(text: str, words: str) -> None:
    assert Filter.parse(text).describe() == words


@pytest.mark.parametrize(
    ("terms", "expected"),
    [
        (["fsdp", "+cuda", "-rocm"], Filter(("fsdp",), ("cuda",), ("rocm",))),
        (["(-rocm)", "[+cuda]"], Filter((), ("cuda",), ("rocm",))),  # the sign inside brackets
        (["+", "-", "-!!", "mps"], Filter(any_of=("mps",))),  # a sign on nothing asks nothing
        (['"graph breaks"', " + graphs "], Filter(("graph breaks",), ("graphs",))),
        (["+x", "x", "-x", "+X"], Filter(("x",), ("x",), ("x",))),
        ([], Filter()),
    ],
)
def test_terms_as_stored_read_leniently(terms: list[str], expected: Filter) -> None:
    assert Filter.from_terms(terms, strict=False) == expected
    # Its terms read back to it, strictly: no any-of term starts with a sign.
    assert Filter.from_terms(expected.terms()) == expected


@pytest.mark.parametrize("terms", [["+"], ["mps", "-!!"], ["(+)"]])
def test_a_sign_on_nothing_is_refused_when_typed(terms: list[str]) -> None:
    with pytest.raises(FilterSyntaxError):
        Filter.from_terms(terms)
