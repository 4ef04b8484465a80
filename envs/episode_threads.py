"""Episodes recorded in worker threads, each with its own env, handed back in order.

MuJoCo's stepping and rendering release the GIL, so two threads with an env each record
expert episodes faster than one on a 2-core machine, while the reader (which writes the
store) sees them in the same order, with the same contents, as one env would give them:
every episode is reset from its own seed (envs/demos.py, `record_demo_episode`).
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")

_make_lock = threading.Lock()  # envs are made one at a time (MuJoCo compiles each model; renderers are made later)


def episodes_in_order(make_env: Callable[[], Any], record: Callable[[Any, int], T], count: int,
                      workers: int, env: Any | None = None) -> Iterator[T]:
    """``record(env, i)`` for ``i`` in ``0 .. count - 1``, yielded in that order.

    With ``workers`` > 1, that many threads each make (``make_env``), use and close their
    own env, at most ``2 * workers`` episodes ahead of the reader. An error in episode ``i``
    is raised when the reader reaches ``i``, after every earlier episode; one in making an
    env at once. Closing the iterator (or an error in the reader) stops the threads after
    their current episode. With one worker, ``env`` (the caller's, who closes it; None:
    one made here and closed) records every episode on the calling thread."""
    if workers <= 1 or count <= 1:
        own = env is None
        env = make_env() if own else env
        try:
            for i in range(count):
                yield record(env, i)
        finally:
            if own:
                env.close()
        return
    yield from _threaded(make_env, record, count, min(workers, count))  # no env made for nothing


def _threaded(make_env: Callable[[], Any], record: Callable[[Any, int], T], count: int,
              workers: int) -> Iterator[T]:
    cond = threading.Condition()
    state: dict[str, Any] = {"next": 0, "read": 0, "stop": False, "error": None}
    done: dict[int, tuple[Any, BaseException | None]] = {}

    def work() -> None:
        try:
            with _make_lock:
                env = make_env()
        except BaseException as exc:  # noqa: BLE001 - handed to the reader
            with cond:
                state["error"] = state["error"] or exc
                state["stop"] = True
                cond.notify_all()
            return
        try:
            while True:
                with cond:
                    while not state["stop"] and state["next"] < count and state["next"] - state["read"] >= 2 * workers:
                        cond.wait()
                    if state["stop"] or state["next"] >= count:
                        return
                    i = state["next"]
                    state["next"] += 1
                try:
                    outcome: tuple[Any, BaseException | None] = (record(env, i), None)
                except BaseException as exc:  # noqa: BLE001 - raised by the reader at episode i
                    outcome = (None, exc)
                with cond:
                    done[i] = outcome
                    if outcome[1] is not None:
                        state["stop"] = True  # no new episodes; the ones under way finish
                    cond.notify_all()
        finally:
            env.close()

    threads = [threading.Thread(target=work, name=f"episodes-{k}", daemon=True) for k in range(workers)]
    for thread in threads:
        thread.start()
    try:
        for i in range(count):
            with cond:
                while i not in done and state["error"] is None:
                    cond.wait()
                if state["error"] is not None:  # an env that could not be made: at once, not when its turn comes
                    raise state["error"]
                value, error = done.pop(i)
                state["read"] = i + 1
                cond.notify_all()
            if error is not None:
                raise error
            yield value
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()
        for thread in threads:
            thread.join()
