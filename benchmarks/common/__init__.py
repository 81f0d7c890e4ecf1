"""What several benchmark scripts share: where the checkout and the shared data are, the
machine a figure was measured on and `codegen replay serve` on a free port. The ClassEval tasks
held out from every selection rule's tuning are ``benchmarks.common.classeval_heldout``, not
exported here: that module also runs on its own (``python -m``), and a package that imported it
first would make runpy warn."""

from benchmarks.common.host import machine
from benchmarks.common.paths import RESULTS, ROOT, SHARED
from benchmarks.common.replay import replay_server

__all__ = ["RESULTS", "ROOT", "SHARED", "machine", "replay_server"]
