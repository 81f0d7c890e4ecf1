"""Choosing one of several candidates: the crew's pick measured offline on recorded runs
(``selection``), through the whole crew by replay (``replay_candidates``), and as one command
(``learned_pick``)."""
