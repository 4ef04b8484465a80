"""Episode store throughput: write and read rates, window-sampling rate against
indexing the same arrays held as in-memory numpy, and the cost of integrity:
`inspect --verify` in MB/s, the checks on open, and append throughput with chunk
checksums against without (stores filled side by side, appends interleaved;
medians and ratios with 95% bootstrap intervals).

    .venv/bin/python benchmarks/bench_store.py [--repeats 3] [--episodes 50] [--checksum-repeats 7]

Image dataset: E episodes x 100 steps, two 96x96 cameras, state 10, action 5.
Low-dim dataset: 10*E episodes x 100 steps, state 10, env_state 14, action 5.
Images are smooth synthetic scenes (gradient background, moving squares), closer
to rendered frames than noise, which would not compress.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import zarr

from robot_learn.data import EpisodeStore, WindowSampler, integrity
from robot_learn.data.commit import read_commit

STEPS, IMAGE, STATE, ACTION = 100, 96, 10, 5


def scene(length: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:IMAGE, 0:IMAGE]
    base = np.stack([xx * 255 // IMAGE, yy * 255 // IMAGE,
                     np.full_like(xx, rng.integers(0, 255))], -1).astype(np.uint8)
    frames = np.repeat(base[None], length, 0)
    for t in range(length):
        cx, cy = (20 + t // 2) % (IMAGE - 12), (30 + t // 3 + seed) % (IMAGE - 12)
        frames[t, cy:cy + 12, cx:cx + 12] = (200, 30, 30)
        frames[t, 60:72, t % 80:t % 80 + 10] = (30, 30, 200)
    return frames


def episode(seed: int, images: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    steps = {"state": rng.normal(size=(STEPS, STATE)).astype(np.float32),
             "action": rng.normal(size=(STEPS, ACTION)).astype(np.float32)}
    if images:
        steps["images/front"] = scene(STEPS, seed)
        steps["images/wrist"] = scene(STEPS, seed + 1000)[:, ::-1].copy()
    else:
        steps["env_state"] = rng.normal(size=(STEPS, 14)).astype(np.float32)
    return steps


def meta(i: int) -> dict:
    return {"task": "stack", "instruction": "put the red cube on the blue cube",
            "success": bool(i % 3), "seed": i, "source": "demo"}


def bench_write_read(root: Path, episodes: list[dict], repeats: int) -> dict[str, float]:
    raw = sum(v.nbytes for ep in episodes for v in ep.values())
    frames = len(episodes) * STEPS
    writes, reads, size = [], [], 0
    for r in range(repeats):
        path = root / f"w{r}.zarr"
        t0 = time.perf_counter()
        store = EpisodeStore.create(path)
        for i, ep in enumerate(episodes):
            store.append_episode(ep, meta(i))
        writes.append(time.perf_counter() - t0)
        size = store.disk_size_bytes()
        t0 = time.perf_counter()
        reader = EpisodeStore.open(path)
        for i in range(reader.num_episodes):
            reader.episode(i)
        reads.append(time.perf_counter() - t0)
        if r < repeats - 1:
            shutil.rmtree(path)
    w, rd = statistics.median(writes), statistics.median(reads)
    return {"frames": frames, "raw_mb": raw / 1e6, "disk_mb": size / 1e6,
            "write_fps": frames / w, "write_mbs": raw / 1e6 / w,
            "read_fps": frames / rd, "read_mbs": raw / 1e6 / rd, "path": str(root / f"w{repeats - 1}.zarr")}


class NumpyWindows:
    """Baseline: the same windows indexed straight from in-memory numpy arrays."""

    def __init__(self, arrays: dict[str, np.ndarray], ends: np.ndarray, obs_keys, to: int, ta: int,
                 batch: int, seed: int) -> None:
        self.arrays, self.obs_keys, self.batch = arrays, obs_keys, batch
        starts = np.concatenate([[0], ends[:-1]])
        lengths = ends - starts
        self.ep = np.repeat(np.arange(len(ends)), lengths)
        self.t = np.arange(ends[-1]) - np.repeat(starts, lengths)
        self.starts, self.last = starts, lengths - 1
        self.obs_off, self.act_off = np.arange(to) - to + 1, np.arange(ta) - to + 1
        self.rng = np.random.default_rng(seed)

    def sample(self) -> dict:
        k = self.rng.integers(0, len(self.t), size=self.batch)
        e, t = self.ep[k], self.t[k]
        base, last = self.starts[e][:, None], self.last[e][:, None]
        oi = base + np.clip(t[:, None] + self.obs_off, 0, last)
        ai = base + np.clip(t[:, None] + self.act_off, 0, last)
        return {"obs": {key: self.arrays[key][oi] for key in self.obs_keys},
                "action": self.arrays["action"][ai]}


def rates(samplers: dict, seconds: float, repeats: int, batch: int) -> dict[str, float]:
    """Median windows/s of each sampler. Runs are interleaved (a, b, c, a, b, c, ...)
    so load from other processes hits all of them alike."""
    runs: dict[str, list[float]] = {name: [] for name in samplers}
    for sample in samplers.values():
        sample()
    for _ in range(repeats):
        for name, sample in samplers.items():
            n, t0 = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - t0) < seconds:
                sample()
                n += 1
            runs[name].append(n * batch / elapsed)
    return {name: statistics.median(r) for name, r in runs.items()}


@contextmanager
def chunk_settings(checksum: bool, empty_chunks: bool):
    """New stores written with or without zstd's content checksum and with or without
    all-zero chunks (the codecs and config store.py reads; version 1 had neither)."""
    saved = integrity.IMAGE_CODEC, integrity.LOWDIM_CODEC, integrity.ARRAY_CONFIG
    integrity.IMAGE_CODEC = zarr.codecs.ZstdCodec(level=saved[0].level, checksum=checksum)
    integrity.LOWDIM_CODEC = zarr.codecs.ZstdCodec(level=saved[1].level, checksum=checksum)
    integrity.ARRAY_CONFIG = {"write_empty_chunks": empty_chunks}
    try:
        yield
    finally:
        integrity.IMAGE_CODEC, integrity.LOWDIM_CODEC, integrity.ARRAY_CONFIG = saved


# Arms of the append comparison: this version's writes, the same without the
# checksum, and what format version 1 wrote.
APPEND_ARMS = {"checksums (v2)": dict(checksum=True, empty_chunks=True),
               "no checksum": dict(checksum=False, empty_chunks=True),
               "version 1": dict(checksum=False, empty_chunks=False)}


def median_ci(values: list[float], seed: int = 0) -> tuple[float, float, float]:
    """Median and 95% percentile-bootstrap interval."""
    v = np.asarray(values)
    boots = np.median(np.random.default_rng(seed).choice(v, size=(4000, len(v))), axis=1)
    return float(np.median(v)), *np.percentile(boots, [2.5, 97.5])


def ratio_ci(a: np.ndarray, b: np.ndarray, seed: int = 0) -> tuple[float, float, float]:
    """sum(a) / sum(b) and its 95% bootstrap interval, resampling the (a_i, b_i)
    pairs together (a_i and b_i ran back to back)."""
    idx = np.random.default_rng(seed).integers(0, len(a), size=(4000, len(a)))
    boots = a[idx].sum(axis=1) / b[idx].sum(axis=1)
    return float(a.sum() / b.sum()), *np.percentile(boots, [2.5, 97.5])


def bench_append_checksums(root: Path, episodes: list[dict], repeats: int) -> dict[str, np.ndarray]:
    """Seconds of each append, [run, episode], for each of APPEND_ARMS.

    Each run fills one store per arm side by side: episode i goes into each in
    turn, the order rotating from episode to episode, so load from other
    processes hits every arm alike. Creating the stores is not timed."""
    arms = list(APPEND_ARMS)
    seconds = {arm: np.zeros((repeats, len(episodes))) for arm in arms}
    for r in range(repeats):
        stores = {}
        for k, arm in enumerate(arms):
            with chunk_settings(**APPEND_ARMS[arm]):
                stores[arm] = EpisodeStore.create(root / f"append_{r}_{k}.zarr")
        for i, ep in enumerate(episodes):
            shift = (i + r) % len(arms)
            for arm in arms[shift:] + arms[:shift]:
                with chunk_settings(**APPEND_ARMS[arm]):
                    t0 = time.perf_counter()
                    stores[arm].append_episode(ep, meta(i))
                    seconds[arm][r, i] = time.perf_counter() - t0
        for store in stores.values():
            store.close()
            shutil.rmtree(store.path)
    return seconds


def bench_verify(path: str, repeats: int) -> dict[str, float]:
    """`inspect --verify` (integrity.verify_store) and the checks `EpisodeStore.open`
    runs, on the store at `path`: medians and intervals over `repeats` runs."""
    mbs, opens, presence, report = [], [], [], None
    root = Path(path)
    for _ in range(repeats):
        report = integrity.verify_store(path)
        assert not report.problems, report.problems
        mbs.append(report.mb_per_s)
        t0 = time.perf_counter()
        store = EpisodeStore.open(path)
        opens.append(time.perf_counter() - t0)
        arrays = integrity.committed_arrays(root, store._group, read_commit(root))
        t0 = time.perf_counter()
        integrity.check_chunks_exist(root, arrays)  # the part of open that grows with the store
        presence.append(time.perf_counter() - t0)
    return {"mbs": median_ci(mbs), "open_ms": median_ci([1e3 * t for t in opens]),
            "presence_ms": median_ci([1e3 * t for t in presence]),
            "chunks": report.chunks,
            "decoded_mb": report.decoded_bytes / 1e6, "disk_mb": report.disk_bytes / 1e6}


def print_integrity(name: str, verify: dict, seconds: dict[str, np.ndarray], frames: int) -> None:
    """Print the verification figures and the append comparison of one dataset."""
    m, lo, hi = verify["mbs"]
    o, olo, ohi = verify["open_ms"]
    print(f"\n{name} dataset, integrity: {verify['chunks']} chunks, {verify['decoded_mb']:.1f} MB decoded "
          f"from {verify['disk_mb']:.1f} MB on disk")
    print(f"  inspect --verify: {m:.0f} MB/s decoded [95% CI {lo:.0f}, {hi:.0f}]")
    p, plo, phi = verify["presence_ms"]
    print(f"  EpisodeStore.open, all checks included: {o:.1f} ms [95% CI {olo:.1f}, {ohi:.1f}]; of it the "
          f"chunk-presence check: {p:.1f} ms [{plo:.1f}, {phi:.1f}]")
    for arm, runs in seconds.items():
        t, tlo, thi = median_ci(list(runs.sum(axis=1)))
        print(f"  append, {arm:<14}: {frames / t:8.0f} frames/s [95% CI {frames / thi:.0f}, {frames / tlo:.0f}]"
              f"  (median of {len(runs)} runs of {runs.shape[1]} appends)")
    new = seconds["checksums (v2)"].ravel()
    for other in ("no checksum", "version 1"):
        r, rlo, rhi = ratio_ci(new, seconds[other].ravel())
        print(f"  append time, checksums (v2) / {other}: {r:.3f} [95% CI {rlo:.3f}, {rhi:.3f}] over "
              f"{new.size} paired appends -> {(r - 1) * 100:+.1f}% "
              f"(goal < +5%: {'met' if rhi < 1.05 else 'not shown' if r < 1.05 else 'NOT met'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=2.0, help="per sampling measurement")
    parser.add_argument("--checksum-repeats", type=int, default=7,
                        help="runs of the append comparison (each fills one store per arm)")
    parser.add_argument("--only-integrity", action="store_true",
                        help="skip the write/read table and window sampling")
    args = parser.parse_args()
    to, ta, batch = 2, 16, 64
    obs_keys = ("state", "images/front", "images/wrist")
    print(f"config: zarr {zarr.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
          f"{os.cpu_count()} cpus; repeats {args.repeats}, medians shown")
    print(f"  image dataset: {args.episodes} episodes x {STEPS} steps, 2 cameras {IMAGE}x{IMAGE}, "
          f"state {STATE}, action {ACTION}")
    print(f"  low-dim dataset: {10 * args.episodes} episodes x {STEPS} steps, state {STATE}, "
          f"env_state 14, action {ACTION}")
    print(f"  sampling: batch {batch}, obs_horizon {to}, action_horizon {ta}, obs {obs_keys}")
    print(f"  integrity: verify and open {args.repeats} runs each; append arms {', '.join(APPEND_ARMS)}: "
          f"{args.checksum_repeats} runs, appends interleaved")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        datasets = {name: [episode(i, images) for i in range(count)]
                    for name, count, images in (("image", args.episodes, True),
                                                ("low-dim", 10 * args.episodes, False))}
        if not args.only_integrity:
            bench_throughput_and_sampling(root, datasets, args, obs_keys, to, ta, batch)
        for name, data in datasets.items():
            path = root / f"verify_{name}.zarr"
            with EpisodeStore.create(path) as store:
                for i, ep in enumerate(data):
                    store.append_episode(ep, meta(i))
            verify = bench_verify(str(path), args.repeats)
            seconds = bench_append_checksums(root, data, args.checksum_repeats)
            print_integrity(name, verify, seconds, len(data) * STEPS)


def bench_throughput_and_sampling(root: Path, datasets: dict[str, list[dict]], args: argparse.Namespace,
                                  obs_keys: tuple[str, ...], to: int, ta: int, batch: int) -> None:
    """The write/read table and the window-sampling comparison."""
    results = {name: bench_write_read(root / name, data, args.repeats) for name, data in datasets.items()}
    print(f"\n{'dataset':<9}{'frames':>8}{'raw MB':>9}{'disk MB':>9}{'write fr/s':>12}"
          f"{'write MB/s':>12}{'read fr/s':>11}{'read MB/s':>11}")
    for name, r in results.items():
        print(f"{name:<9}{r['frames']:>8}{r['raw_mb']:>9.1f}{r['disk_mb']:>9.1f}"
              f"{r['write_fps']:>12.0f}{r['write_mbs']:>12.1f}{r['read_fps']:>11.0f}{r['read_mbs']:>11.1f}")

    store = EpisodeStore.open(results["image"]["path"])
    arrays = {k: store.read(k) for k in (*obs_keys, "action")}
    base = NumpyWindows(arrays, store.episode_ends, obs_keys, to, ta, batch, seed=0)
    cached = WindowSampler(store, obs_keys=obs_keys, obs_horizon=to, action_horizon=ta,
                           batch_size=batch, seed=0, cache=True)
    direct = WindowSampler(store, obs_keys=obs_keys, obs_horizon=to, action_horizon=ta,
                           batch_size=batch, seed=0, cache=False)
    r = rates({"numpy": base.sample, "cached": cached.sample, "direct": direct.sample},
              args.seconds, args.repeats, batch)
    r_np, r_cached, r_direct = r["numpy"], r["cached"], r["direct"]
    print(f"\n{'window sampling':<34}{'windows/s':>12}{'ratio to numpy':>16}")
    print(f"{'in-memory numpy indexing':<34}{r_np:>12.0f}{1.0:>16.2f}")
    print(f"{'WindowSampler cache=True':<34}{r_cached:>12.0f}{r_cached / r_np:>16.2f}")
    print(f"{'WindowSampler cache=False (zarr)':<34}{r_direct:>12.0f}{r_direct / r_np:>16.3f}")
    print(f"goal: cache=True ratio >= 0.5 -> {'met' if r_cached / r_np >= 0.5 else 'NOT met'}")


if __name__ == "__main__":
    main()
