"""Issue 19, item 13: teacher credentials stay out of stored rows; keys from the OS keyring."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import KeyringError

from core.datagen.teacher import OpenAITeacher, TeacherSpec, strip_userinfo
from core.runtime.client import ModelError
from core.serving.server import free_port


class MemoryKeyring(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self, entries: dict[tuple[str, str], str]) -> None:
        super().__init__()
        self.entries = entries

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.entries.pop((service, username), None)


class BrokenKeyring(MemoryKeyring):
    def get_password(self, service: str, username: str) -> str | None:
        raise KeyringError("locked")


@pytest.fixture
def use_keyring() -> Iterator[object]:
    before = keyring.get_keyring()

    def install(backend: KeyringBackend) -> None:
        keyring.set_keyring(backend)

    yield install
    keyring.set_keyring(before)


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("http://user:pw@host:8000/v1", "http://host:8000/v1"),
        ("https://tok@api.example.com/v1?x=1", "https://api.example.com/v1?x=1"),
        ("http://a:b@c@host/v1", "http://host/v1"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    ],
)
def test_userinfo_is_stripped(url: str, clean: str) -> None:
    assert strip_userinfo(url) == clean
    assert TeacherSpec("openai", "m", url).to_dict()["url"] == clean


def test_a_teacher_url_with_credentials_is_recorded_without_them() -> None:
    port = free_port()
    teacher = OpenAITeacher(f"http://user:s3cret@127.0.0.1:{port}/v1", "m", max_retries=0)

    async def call() -> str:
        try:
            await teacher.complete([{"role": "user", "content": "hi"}])
        except ModelError as exc:
            return str(exc)
        finally:
            await teacher.close()
        return ""

    message = asyncio.run(call())
    assert teacher.spec.to_dict()["url"] == f"http://127.0.0.1:{port}/v1"
    assert "s3cret" not in message and "127.0.0.1" in message


def test_api_key_from_the_keyring_before_the_environment(
    use_keyring: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    install = use_keyring
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    install(MemoryKeyring({("hat-studio", "api.example.com"): "from-keyring"}))  # type: ignore[operator]
    teacher = OpenAITeacher("https://api.example.com/v1", "m")
    assert teacher._settings["api_key"] == "from-keyring"
    other = OpenAITeacher("https://other.example.com/v1", "m")
    assert other._settings["api_key"] == "from-env"
    asyncio.run(teacher.close())
    asyncio.run(other.close())


def test_a_failing_keyring_falls_back_to_the_environment(
    use_keyring: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    install = use_keyring
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    install(BrokenKeyring({}))  # type: ignore[operator]
    teacher = OpenAITeacher("https://api.example.com/v1", "m")
    assert teacher._settings["api_key"] == "from-env"
    asyncio.run(teacher.close())
