"""Repository-wide pytest setup: the harness plugin (fuzz options, Hypothesis profiles)."""

pytest_plugins = ["harness.plugin"]
