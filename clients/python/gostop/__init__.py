"""gostop: the Go-Stop (고스톱 / 맞고) rules engine, its game service, clients, bots and tools.

One distribution, layered so that each part imports only the parts below it:

- ``gostop.engine``: the pure rules engine (no I/O, no clocks, no global randomness);
- ``gostop.v1`` (generated from ``proto/``) and ``gostop.wire``: the messages and the one
  conversion between engine values and messages;
- ``gostop.service``: the gRPC game service (needs the ``[server]`` extra), and its programs
  (``gostop.service.programs``: the server and the bot worker, clients of its API);
- ``gostop.client``: the synchronous and asyncio clients, their errors and the seat runner;
- ``gostop.bots``: the bot interface, the built-in bots and the in-process arena;
- ``gostop.tools``: the ``gostop`` command (serve, play, bot, tournament, demo, settings).
"""
