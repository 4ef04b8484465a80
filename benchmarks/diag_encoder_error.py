"""Where a frame encoder errs: its xy error of the named object on demo frames, per task phase.

Reads a saved privileged frame encoder and a demo store with cameras and ``env_state``,
predicts the object to move's position on every frame of the first ``--episodes``
demos, and prints the error (cm, median and p90) per phase of the task, then the fit of
predicted on true position per axis (a slope under 1 is shrinkage towards the middle).

  python benchmarks/diag_encoder_error.py data/frame_encoders/<encoder> data/bin_place_demos_front_wrist_96.zarr
"""

from __future__ import annotations

import argparse

import numpy as np
import torch

from robot_learn.data import EpisodeStore
from robot_learn.envs.base_env import object_pose_labels
from robot_learn.policies.frame_encoder import FrameEncoder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("encoder")
    parser.add_argument("store")
    parser.add_argument("--episodes", type=int, default=40)
    args = parser.parse_args()
    torch.set_num_threads(1)
    encoder = FrameEncoder.load(args.encoder)
    names = encoder.config.label_names
    xy = [names.index("move_x"), names.index("move_y")]
    store = EpisodeStore.open(args.store)
    predicted, true, phases = [], [], []
    for episode in range(min(args.episodes, store.num_episodes)):
        start, end = store.episode_range(episode)
        images = {c: torch.from_numpy(store.read(f"images/{c}", start, end)) for c in encoder.config.cameras}
        instructions = [str(store.meta["instruction"][episode])] * (end - start)
        with torch.no_grad():
            predicted.append(encoder.predict_labels(encoder(images, instructions)).numpy()[:, xy])
        true.append(object_pose_labels(store.read("env_state", start, end))[:, :2])
        phases.append(store.read("phase", start, end))
    predicted, true, phases = np.concatenate(predicted), np.concatenate(true), np.concatenate(phases)
    error = np.linalg.norm(predicted - true, axis=1) * 100.0
    print("| phase | frames | median (cm) | p90 (cm) |\n| ---: | ---: | ---: | ---: |")
    for phase in np.unique(phases):
        e = error[phases == phase]
        print(f"| {int(phase)} | {len(e)} | {np.median(e):.2f} | {np.percentile(e, 90):.2f} |")
    for axis, name in enumerate("xy"):
        slope, offset = np.polyfit(true[:, axis], predicted[:, axis], 1)
        residual = predicted[:, axis] - (slope * true[:, axis] + offset)
        print(f"{name}: slope {slope:.3f}, true sd {true[:, axis].std() * 100:.2f} cm, "
              f"residual sd {residual.std() * 100:.2f} cm")


if __name__ == "__main__":
    main()
