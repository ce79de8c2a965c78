"""gostop_client: the Python client of the gostop game service, bots and tools."""
