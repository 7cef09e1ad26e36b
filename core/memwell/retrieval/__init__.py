"""Pure retrieval building blocks shared by every backend (chunking, keywords, fusion, ...)."""
