"""The model: the agents' client (``llm``), the prompts, and our Ollama-compatible server
(``modelserver``)."""
