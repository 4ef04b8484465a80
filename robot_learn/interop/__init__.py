"""Interop with data formats of other codebases (LeRobotDataset v3)."""
