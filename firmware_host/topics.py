"""MQTT topic names the table may publish to, checked before anything is written.

The journal checks an outbox entry's topic (relative to the table's root) when it is
queued, so a bad topic is refused in the transaction that would have stored it
rather than at publication; the MQTT link checks the full name it publishes.
"""

from __future__ import annotations


class TopicError(ValueError):
    """A topic that must not be published (wildcard, empty level, '$' prefix)."""


def check_relative_topic(topic: str) -> str:
    """A topic below the table's root: non-empty levels, no wildcards, no leading '$'."""
    if not isinstance(topic, str) or not topic:
        raise TopicError("topic must be a non-empty string")
    if topic.startswith("$") or "\x00" in topic:
        raise TopicError(f"topic {topic!r} may not start with '$' or contain NUL")
    for level in topic.split("/"):
        if not level:
            raise TopicError(f"topic {topic!r} has an empty level")
        if "+" in level or "#" in level:
            raise TopicError(f"topic {topic!r} contains an MQTT wildcard")
    return topic


def check_topic(topic: str) -> str:
    """A full topic name fit for PUBLISH: no wildcards, no empty levels, no '$', <= 65535 bytes."""
    check_relative_topic(topic)
    if len(topic.encode("utf-8")) > 65535:
        raise TopicError("topic is longer than 65535 bytes")
    return topic
