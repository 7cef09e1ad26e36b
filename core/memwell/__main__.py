"""``python -m memwell``: the same as the ``memwell`` command."""

from memwell.cli.main import main

main()
