"""``HEAD``, answered as the ``GET`` it stands for (RFC 9110, 9.3.2).

The outermost layer (:class:`craig.entrypoints.http.request_context.RequestContext`) hands the
application a ``GET`` marked with :data:`HEAD_KEY` and sends none of its content; a route whose
content is costly or is itself what gets recorded (an attachment's download) asks
:func:`answers_head` and answers the headers alone.
"""

from __future__ import annotations

from typing import Any

#: The scope key that marks a GET standing for a HEAD.
HEAD_KEY = "craig.head"


def answers_head(scope: Any) -> bool:
    """Whether this GET stands for a HEAD: its content will not be sent."""
    return bool(scope.get(HEAD_KEY))
