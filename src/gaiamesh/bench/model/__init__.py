"""What the model writes when held to a shape: plans that parse and validate, output held to a grammar."""
