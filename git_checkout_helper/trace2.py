"""A small trace2 writer: the ``GIT_TRACE2`` (normal) and ``GIT_TRACE2_EVENT``
(JSON) targets, as far as checkout needs them.

Mirrors ``trace2/tr2_dst.c`` for target parsing (``1``/``true`` = stderr, a
digit = that fd, an absolute path = append, an existing directory = one new
file per process) and the event and normal formats of ``tr2_tgt_event.c`` /
``tr2_tgt_normal.c`` for the events we emit: ``data`` (the ``pcheckout``
collision records git's tests grep for), ``child_start`` and ``child_exit``.
Each event is one ``write()`` to an ``O_APPEND`` descriptor, so lines from the
coordinator and its helpers interleave whole, as git's do.

The targets are handed in by the CLI layer (``Trace2.from_env`` takes its
environment as a parameter); this module never reads ``os.environ`` itself.
"""

from __future__ import annotations

import os
import time

from .record import json_bytes

__all__ = ["Trace2"]


def _open_target(value: str | None, session: Trace2) -> int | None:
    if not value or value.lower() in ("0", "false", "no", "off"):
        return None
    if value.lower() in ("1", "true", "yes", "on"):
        return 2
    if value.isdigit() and len(value) == 1:
        return int(value)
    if not os.path.isabs(value):
        return None  # git warns and disables; relative paths are not targets
    try:
        if os.path.isdir(value):
            value = os.path.join(value, session.sid.replace("/", "-"))
        return os.open(value, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError:
        return None


class Trace2:
    """The trace2 session of one process."""

    def __init__(
        self,
        event_target: str | None = None,
        normal_target: str | None = None,
        parent_sid: str | None = None,
        nesting: int = 1,
    ) -> None:
        self._parent_sid = parent_sid
        self._sid: str | None = None
        self.nesting = nesting
        self._event = _open_target(event_target, self)
        self._normal = _open_target(normal_target, self)
        self._t0 = time.monotonic()
        self._next_child = 0
        self._regions: list[float] = []  # the open regions' start times, outermost first

    @property
    def sid(self) -> str:
        """``tr2_sid_get``: made when first asked for (a session with no
        target never asks, and does not import what makes it)."""
        if self._sid is None:
            import uuid
            from datetime import UTC, datetime

            own = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}-H{uuid.uuid4().hex[:8]}-P{os.getpid():08x}"
            self._sid = f"{self._parent_sid}/{own}" if self._parent_sid else own
        return self._sid

    @classmethod
    def from_env(cls, env) -> Trace2:
        """The session ``GIT_TRACE2_EVENT``, ``GIT_TRACE2`` and
        ``GIT_TRACE2_PARENT_SID`` in ``env`` ask for (the CLI layer's environment)."""
        return cls(env.get("GIT_TRACE2_EVENT"), env.get("GIT_TRACE2"), env.get("GIT_TRACE2_PARENT_SID"))

    @property
    def enabled(self) -> bool:
        return self._event is not None or self._normal is not None

    def _emit(self, event: str, fields: dict, normal: str | None) -> None:
        if self._event is None and self._normal is None:
            return
        import threading  # (imported when tracing only)
        from datetime import UTC, datetime

        now = datetime.now(UTC)
        if self._event is not None:
            head = {
                "event": event,
                "sid": self.sid,
                # (helper I/O threads are named th01:checkout..., as git names its threads)
                "thread": "main" if threading.current_thread() is threading.main_thread()
                else threading.current_thread().name,
                "time": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "file": "git_checkout_helper",
                "line": 0,
            }
            head.update(fields)
            try:
                os.write(self._event, json_bytes(head) + b"\n")
            except OSError:
                pass
        if self._normal is not None and normal is not None:
            line = f"{now.strftime('%H:%M:%S.%f')} {'git_checkout_helper':<24} {normal}\n"
            try:
                os.write(self._normal, line.encode("utf-8", "surrogateescape"))
            except OSError:
                pass

    def data(self, category: str, key: str, value: str) -> None:
        """``trace2_data_string``: git's tests match ``..."key":K,"value":V}``."""
        t = time.monotonic() - self._t0
        self._emit(
            "data",
            {"t_abs": round(t, 6), "t_rel": round(t, 6), "nesting": self.nesting,
             "category": category, "key": key, "value": value},
            f"data {category}:{key}={value}" if self._normal is not None else None,
        )

    def child_start(self, argv: list[str], hook_name: str | None = None) -> int:
        """``trace2_child_start``; returns the child id for :meth:`child_exit`.
        ``hook_name``: a hook, child class ``hook`` (``run_hooks_opt``)."""
        cid = self._next_child
        self._next_child += 1
        fields: dict = {"child_id": cid, "child_class": "?" if hook_name is None else "hook"}
        if hook_name is not None:
            fields["hook_name"] = hook_name
        fields.update(use_shell=False, argv=argv)
        self._emit("child_start", fields, f"child_start[{cid}] {' '.join(argv)}")
        return cid

    def region_enter(self, category: str, label: str, msg: str | None = None) -> None:
        """``trace2_region_enter_printf`` (the event target only, as git's normal
        target prints no regions)."""
        self._regions.append(time.monotonic())
        fields: dict = {"nesting": self.nesting - 1 + len(self._regions), "category": category, "label": label}
        if msg is not None:
            fields["msg"] = msg
        self._emit("region_enter", fields, None)

    def region_leave(self, category: str, label: str) -> None:
        """``trace2_region_leave``: ``t_rel`` from its region's start."""
        started = self._regions.pop()
        self._emit("region_leave", {"t_rel": round(time.monotonic() - started, 6),
                                    "nesting": self.nesting + len(self._regions), "category": category,
                                    "label": label},
                   None)

    def child_exit(self, cid: int, pid: int, code: int, elapsed: float) -> None:
        self._emit(
            "child_exit",
            {"child_id": cid, "pid": pid, "code": code, "t_rel": round(elapsed, 6)},
            f"child_exit[{cid}] pid:{pid} code:{code} elapsed:{elapsed:.6f}",
        )

    def close(self) -> None:
        for fd in (self._event, self._normal):
            if fd is not None and fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._event = self._normal = None
