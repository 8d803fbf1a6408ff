from hypothesis import given
from hypothesis import strategies as st

from tianwang.recent import RecentSet


def test_the_oldest_key_is_forgotten_past_the_limit() -> None:
    keys = RecentSet(3)
    for key in "abcd":
        keys.add(key)
    assert "a" not in keys and all(k in keys for k in "bcd") and len(keys) == 3
    keys.add("b")  # already there: nothing forgotten, its place kept
    keys.add("e")
    assert "b" not in keys and all(k in keys for k in "cde")
    keys.discard("c")
    assert "c" not in keys and len(keys) == 2 and keys
    assert not RecentSet(1)


@given(st.lists(st.integers(0, 50)), st.integers(1, 10))
def test_it_holds_exactly_the_last_distinct_keys_added(adds: list[int], limit: int) -> None:
    keys, model = RecentSet(limit), []  # the model: a queue of the keys held
    for key in adds:
        keys.add(key)
        if key not in model:
            model.append(key)
            del model[:-limit]
    assert {k for k in range(51) if k in keys} == set(model) and len(keys) == len(model)
