"""One turn: store the words, gather evidence, fit the request, stream the rounds."""
