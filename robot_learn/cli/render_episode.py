"""``robot-learn render-episode PATH episode=0 out=episode.mp4 camera=front``."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from robot_learn.cli.errors import CLIError
from robot_learn.cli.keyvalue import run_simple

USAGE = "robot-learn render-episode PATH [episode=0] [out=episode.mp4] [camera=front|all] [fps=10]"
DEFAULTS = {"episode": 0, "out": "episode.mp4", "camera": "front", "fps": 10}


def render_episode(path: str, episode: int = 0, out: str = "episode.mp4",
                   camera: str = "front", fps: int = 10) -> int:
    """Write the frames of one stored episode to ``out``; ``camera=all`` tiles every camera."""
    from robot_learn.cli.inspect_store import open_store
    from robot_learn.evaluation.videos import tile_cameras, write_video

    store = open_store(path)  # clear error for a missing or broken store
    n = store.num_episodes
    if not 0 <= episode < n:
        raise CLIError(f"episode {episode} out of range; the store has {n} episodes (0..{n - 1})")
    cameras = [k.split("/", 1)[1] for k in store.keys if k.startswith("images/")]
    if not cameras:
        raise CLIError(f"store '{path}' has no camera images to render (keys: "
                       f"{', '.join(store.keys)})")
    chosen = cameras if camera == "all" else [camera]
    if camera != "all" and camera not in cameras:
        raise CLIError(f"unknown camera '{camera}'; valid cameras: {', '.join(cameras)}, all")
    steps = store.episode(episode)["steps"]
    streams = {cam: np.asarray(steps[f"images/{cam}"]) for cam in chosen}
    frames = [tile_cameras({cam: streams[cam][t] for cam in chosen})
              for t in range(len(streams[chosen[0]]))]
    write_video(frames, out, fps=fps)
    print(f"wrote {len(frames)} frames of episode {episode} ({'+'.join(chosen)}) to {out}")
    return 0


def main(argv: Sequence[str]) -> int:
    """Entry point for ``robot-learn render-episode``."""
    return run_simple(render_episode, argv, DEFAULTS, USAGE,
                      "Writes one stored episode to mp4; camera=all puts the cameras "
                      "side by side.", "robot-learn render-episode")
