"""The plugin contract: the types, hooks and errors that core and plugins share."""
