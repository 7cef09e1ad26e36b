"""memwell-jsonfile: an example memwell backend that keeps its index in one JSON file."""
