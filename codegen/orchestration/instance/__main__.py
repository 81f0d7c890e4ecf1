"""``make home``: install or upgrade ``$DAGSTER_HOME/dagster.yaml``."""

import os
from pathlib import Path

from codegen.orchestration.instance.home import install_instance_yaml

install_instance_yaml(Path(os.environ["DAGSTER_HOME"]))
