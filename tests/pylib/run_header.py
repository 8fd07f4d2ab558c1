"""A recording's run header (docs/formats.md, "Recording": 8 bytes of magic, u32 version,
u32 length, then the header's JSON), read without mcuprof and checked against its schema,
docs/schema/run-header.schema.json (Debian's python3-jsonschema, scripts/setup.sh)."""
import json
import struct
from pathlib import Path

import jsonschema

REPO = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO / "docs" / "schema" / "run-header.schema.json"
MAGIC = b"mcuprof\x1a"

_validator = None


def validator() -> jsonschema.protocols.Validator:
    global _validator
    if _validator is None:
        schema = json.loads(SCHEMA_PATH.read_text())
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _validator = cls(schema)
    return _validator


def schema_errors(header) -> list[str]:
    """What in `header` the schema does not allow, one line each; empty when it is valid."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(validator().iter_errors(header), key=lambda e: list(map(str, e.absolute_path)))]


def header_text(data: bytes) -> bytes:
    """The header's JSON bytes of a recording's bytes."""
    assert data[:8] == MAGIC, "not an mcuprof recording"
    length = struct.unpack_from("<I", data, 12)[0]
    assert 16 + length <= len(data), "the header is cut short"
    return data[16:16 + length]


def checked(header: dict, what: str = "header") -> dict:
    errors = schema_errors(header)
    assert not errors, f"{what} does not follow {SCHEMA_PATH.name}:\n" + "\n".join(errors)
    return header


def read_header(path: Path) -> dict:
    """The header of the recording at `path`, which must follow the schema."""
    return checked(json.loads(header_text(Path(path).read_bytes())), str(path))


def records_start(data: bytes, what: str = "recording") -> int:
    """Where the first record of a recording's bytes starts, after its header, which must follow
    the schema: every reader of a recording's records checks the header on the way."""
    text = header_text(data)
    checked(json.loads(text), what)
    return 16 + len(text)
