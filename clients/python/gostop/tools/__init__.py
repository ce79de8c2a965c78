"""The ``gostop`` command and the programs behind it: terminal play, the bot command and tournaments."""
