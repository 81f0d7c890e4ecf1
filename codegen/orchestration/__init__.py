"""The code location and the ``codegen`` CLI (Dagster wiring only).

Dagster's notices about its own API (``BetaWarning``, ``PreviewWarning``,
``SupersessionWarning``: a parameter we use deliberately is in beta, say) are for whoever
maintains this code, not for users of the CLI or the UI's logs, so every process that loads
the code location or the CLI hides them. Matched by message, so that the CLI's quick commands
need not import Dagster to set the filter.
"""

import warnings

DAGSTER_NOTICES = r".*(is currently in (beta|preview)|has been superseded|is superseded).*"
warnings.filterwarnings("ignore", message=DAGSTER_NOTICES)
# urllib3's notice that SOCKS proxies need PySocks, raised when requests probes for it: not
# something a user asked about (it broke the outage test's at-most-3-stderr-lines in CI).
warnings.filterwarnings("ignore", message="SOCKS support in urllib3 requires")
