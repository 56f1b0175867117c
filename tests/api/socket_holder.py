#!/usr/bin/env python3
"""Holds a listening socket on 127.0.0.1:PORT as a systemd socket unit does
(prewarmd.socket), and runs COMMAND with it as fd 3 (LISTEN_FDS=1, LISTEN_PID).
Each time COMMAND ends, the holder keeps the socket and waits for GO_FILE (which it
removes) before it runs COMMAND again. COMMAND's pid is in PID_FILE while it runs.
SIGTERM ends COMMAND, then the holder.

    socket_holder.py PORT GO_FILE PID_FILE -- COMMAND...
"""
import os
import signal
import socket
import sys
import time


def main():
    if len(sys.argv) < 6 or sys.argv[4] != "--":
        sys.exit(__doc__)
    port, go_file, pid_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    command = sys.argv[5:]
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    held.bind(("127.0.0.1", port))
    held.listen(128)
    child = 0

    def end(_signum, _frame):
        if child:
            os.kill(child, signal.SIGTERM)
            os.waitpid(child, 0)
        sys.exit(0)

    signal.signal(signal.SIGTERM, end)
    while True:
        child = os.fork()
        if child == 0:
            os.dup2(held.fileno(), 3)
            os.set_inheritable(3, True)  # also when the socket was fd 3 already
            os.environ["LISTEN_FDS"] = "1"
            os.environ["LISTEN_PID"] = str(os.getpid())
            os.execv(command[0], command)
        with open(pid_file, "w") as out:
            out.write(f"{child}\n")
        os.waitpid(child, 0)
        child = 0
        os.unlink(pid_file)
        while not os.path.exists(go_file):
            time.sleep(0.05)
        os.unlink(go_file)


if __name__ == "__main__":
    main()
