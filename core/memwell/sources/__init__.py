"""Where memory comes from: Markdown discovery, safe reads, session transcripts, redaction."""
