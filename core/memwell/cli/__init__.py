"""The ``memwell`` command line."""
