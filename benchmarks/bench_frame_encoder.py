"""Frame-encoder variants pretrained on the same rendered frames, side by side.

Renders one frame set (the preset's kinds of frame: resets with ``held`` and ``placed``
fractions, plus noisy expert episodes), then pretrains each variant on it for the
same number of steps and prints the held-out xy error of the named object (median and
p90, cm), the held-out loss and the wall time. Variants change the encoder's settings
or the labels it regresses:

- ``preset``: the preset's encoder and all scene labels;
- ``kp64``: 64 keypoints and 128 features per camera;
- ``stem2``: a stride-2 stem (twice the resolution in every stage, about 4x the cost);
- ``move_only``: only the object to move's 5 labels;
- ``objects_only``: both objects' 10 labels (no grasp centre or gripper);
- ``offset``: all scene labels plus the object's offset from the grasp centre, squashed
  as tanh(offset / 5 cm) so that the last centimetres before a grasp weigh most.

Besides the named object's error it prints its offset error from the grasp centre on
held-out frames within 5 cm of it (what a grasp needs; from the move and grasp-centre heads).

  python benchmarks/bench_frame_encoder.py --task bin_place --steps 1500 --variants preset kp64 move_only
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from robot_learn.envs.scene_frames import render_scene_frames
from robot_learn.policies.frame_encoder import FrameEncoderConfig, FramePretrainConfig
from robot_learn.training.frame_pretraining import pretrain_frame_encoder

VARIANTS = {
    "preset": ({}, None),
    "kp64": ({"num_keypoints": 64, "camera_dim": 128}, None),
    "stem2": ({"stem_stride": 2}, None),
    "move_only": ({}, 5),
    "objects_only": ({}, 10),
    "offset": ({}, "offset"),
}
OFFSET_SCALE_M = 0.05


def with_offset_labels(labels: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Append tanh((object to move - grasp centre) / 5 cm) per axis as three more labels."""
    move = labels[:, [names.index(f"move_{a}") for a in "xyz"]]
    tcp = labels[:, [names.index(f"tcp_{a}") for a in "xyz"]]
    offset = np.tanh((move - tcp) / OFFSET_SCALE_M).astype(np.float32)
    return np.concatenate([labels, offset], axis=1), names + ["offset_x", "offset_y", "offset_z"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="bin_place")
    parser.add_argument("--resets", type=int, default=4000)
    parser.add_argument("--expert-episodes", type=int, default=40)
    parser.add_argument("--held", type=float, default=0.25)
    parser.add_argument("--placed", type=float, default=0.1)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    t0 = time.perf_counter()
    frames = render_scene_frames([args.task], args.resets, args.expert_episodes, held=args.held,
                                 placed=args.placed, progress_bar=True)
    print(f"rendered {len(frames)} frames in {time.perf_counter() - t0:.0f} s")
    names = list(frames.label_names)
    print("| variant | median (cm) | p90 (cm) | grasp offset median (cm) | grasp offset p90 (cm) | held-out loss "
          "| wall (s) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for variant in args.variants:
        settings, labels_kind = VARIANTS[variant]
        if labels_kind == "offset":
            labels, keep = with_offset_labels(frames.labels, names)
        else:
            keep = names[:labels_kind] if labels_kind else names
            labels = np.ascontiguousarray(frames.labels[:, :len(keep)])
        config = FrameEncoderConfig(label_names=keep, **settings)
        t0 = time.perf_counter()
        _encoder, metrics = pretrain_frame_encoder(
            {c: frames.images[c] for c in config.cameras}, labels, frames.instruction, config,
            FramePretrainConfig(steps=args.steps))
        grasp = (f"{metrics['grasp_offset_error_cm_median']:.2f} | {metrics['grasp_offset_error_cm_p90']:.2f}"
                 if "grasp_offset_error_cm_median" in metrics else "- | -")
        print(f"| {variant} | {metrics['move_xy_error_cm_median']:.2f} | {metrics['move_xy_error_cm_p90']:.2f} | "
              f"{grasp} | {metrics['val_loss']:.3f} | {time.perf_counter() - t0:.0f} |", flush=True)
    print(json.dumps(vars(args)))


if __name__ == "__main__":
    main()
