"""The live web page served by the network service (templates, static files, routes)."""
