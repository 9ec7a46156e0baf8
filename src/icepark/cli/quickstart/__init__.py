"""``icepark quickstart``: the main job, its dataset, report and cross-engine check."""
