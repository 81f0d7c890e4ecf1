"""multiagent-codegen: one import package; see README.md for the layout."""
