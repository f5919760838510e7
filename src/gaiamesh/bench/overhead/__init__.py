"""What the harness itself costs: relaying a frame against its floor, the model server's speed, a team's start-up,
runs at once on the service."""
