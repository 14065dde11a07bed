"""Safe, fast execution of untrusted generated code against an API environment.

``Sandbox`` (runner.py) is the caller's handle; the code runs in forked children of a separate
server process (server.py), after an AST allow-list check (policy.py) and with only a small set
of builtins (builtins.py). The server runs behind an OS wall: bubblewrap namespaces
(isolation.py), whose only way out is an environment's own API (forwarder.py), and a seccomp
filter in each child (seccomp.py).
"""

from soay.sandbox.policy import PolicyViolation, check_code
from soay.sandbox.protocol import Limits
from soay.sandbox.runner import ExecutionResult, Sandbox

__all__ = ["ExecutionResult", "Limits", "PolicyViolation", "Sandbox", "check_code"]
