"""Text generation (text in, text out): the plugin contract, the extractive default, selection."""
