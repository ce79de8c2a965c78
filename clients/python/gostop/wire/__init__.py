"""The wire layer: the generated messages of ``gostop.v1`` and the one conversion between them and engine values."""
