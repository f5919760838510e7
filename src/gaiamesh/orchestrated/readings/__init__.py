"""Hand-written readings of English (arithmetic a question implies, dates a document implies,
other writers' question forms, numbers and clauses), moved here as they were: a later issue
replaces them with the model's readings over typed candidates."""
