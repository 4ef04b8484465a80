"""A browser console for operators supervising several HITL sessions (FastAPI + uvicorn).

Each session is a :class:`~robot_learn.loops.session.HITLSession` on its own thread
(:class:`ConsoleSession`), driven through a :class:`ConsoleOperator`: the console's
takeover, hand back, pause, reset and e-stop are the session's own control
requests, and the steps after a takeover are recorded with ``intervention`` set.
:class:`OperatorConsole` holds the sessions, the help queue and the labels;
:mod:`.app` serves them behind a token; :class:`ConsoleServer` runs uvicorn.
``robot-learn console`` (``robot_learn.cli.console``) starts one on simulated sessions.
"""

from robot_learn.console.console_session import ConsoleCommandRefused, ConsoleSession, SessionSetup
from robot_learn.console.help_queue import HelpQueue, HelpRequest
from robot_learn.console.operator import CommandRecord, ConsoleOperator
from robot_learn.console.operator_console import OperatorConsole
from robot_learn.console.request_checks import COMMANDS, BadConsoleRequest
from robot_learn.console.server import ConsoleServer
from robot_learn.console.stand_in_policy import StandInPolicy

__all__ = ["ConsoleCommandRefused", "ConsoleSession", "SessionSetup", "HelpQueue", "HelpRequest", "CommandRecord",
           "ConsoleOperator", "OperatorConsole", "COMMANDS", "BadConsoleRequest", "ConsoleServer", "StandInPolicy"]
