"""The HTTP face of ``jaxbandits serve`` (FastAPI, the optional extra ``jaxbandits[serve]``):
:func:`create_app` (``POST /decide``, ``/feedback``, ``/advance``, ``GET /stats``, ``/health`` and
the dashboard), the request bodies' models (:func:`request_models`) and :func:`run` (uvicorn).
"""
from typing import Dict, List, Optional

from .config import ServeConfig
from .service import ID_LIMIT, BadRequest, Service


_BODIES = None


def request_models():
    """The request bodies of the HTTP API as pydantic models ``(Decide, Feedback, Advance)``:
    strict types (no ``"3"`` for 3, no ``2.0`` or ``true`` for an integer), unknown keys refused,
    bounds on each field. :func:`create_app` parses and validates each body with them in one step
    (pydantic's own JSON parser: its nesting limit turns a deeply nested body into a 400, never a
    500); what depends on the config (``max_batch``, the arms, the channel's rewards, the clock) is
    checked by :class:`Service` afterwards.

    Returns:
        tuple: the pydantic model classes ``(Decide, Feedback, Advance)`` (built once, then
        cached).

    Example:
        >>> Decide, Feedback, Advance = request_models()
        >>> Decide(n=3).n
        3
        >>> Decide(n="3")
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for Decide
        ...
    """
    global _BODIES
    if _BODIES is None:
        from typing import Annotated, Union

        from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

        def _id(i):
            if abs(i) >= ID_LIMIT:
                raise ValueError("must be below 2**62 in absolute value")
            return i

        Finite = Annotated[StrictFloat, Field(allow_inf_nan=False)]
        Now = Optional[Union[StrictInt, Finite]]  # a round (no clock) or a timestamp (a clock)

        class _Body(BaseModel):
            model_config = ConfigDict(extra="forbid", strict=True)

        class Decide(_Body):
            n: StrictInt = Field(1, ge=1, description="decisions to make (at most max_batch)")
            now: Now = None

        class Event(_Body):
            id: Annotated[StrictInt, AfterValidator(_id)] = Field(description="a decision id")
            reward: Optional[Finite] = Field(None, description="the reward (conversions: 1 or absent)")
            arm: Optional[StrictStr] = Field(None, description="the arm the decision chose (checked)")

        class Feedback(_Body):
            events: List[Event]
            now: Now = None

        class Advance(_Body):
            now: Union[StrictInt, Finite]

        _BODIES = (Decide, Feedback, Advance)
    return _BODIES


#: pydantic's error types in words (the rest: pydantic's own message).
_WORDS = {"int_type": "must be an integer", "int_parsing": "must be an integer", "int_from_float": "must be an integer",
          "float_type": "must be a finite number", "float_parsing": "must be a finite number",
          "finite_number": "must be a finite number", "list_type": "must be a list", "string_type": "must be a string"}


_FIELDS = ("n", "now", "events", "id", "reward", "arm")


def _validation_message(errors, allowed) -> str:
    """One line naming the field (``events[1].id``) of the first of pydantic's ``errors`` (an unknown
    key first: a misspelt key also makes the right one missing)."""
    e = next((x for x in errors if x.get("type") == "extra_forbidden"), errors[0])
    loc, kind = tuple(e.get("loc", ())), e.get("type", "")
    if kind == "extra_forbidden" and loc:  # the last name is the unknown key itself
        inner = [x for x in loc[:-1] if isinstance(x, int) or x in _FIELDS]
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in inner).lstrip(".")
        return (f"{where + ': ' if where else ''}unknown key {loc[-1]!r} (allowed: "
                f"{', '.join(allowed.get(bool(inner), ()))})")
    path = [x for x in loc if isinstance(x, int) or x in _FIELDS]
    union = len(path) < len(loc)  # a union's member tag ("int", "float"): the field is a number
    where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in path).lstrip(".")
    got = e.get("input")
    shown = repr(got) if len(repr(got)) <= 60 else repr(got)[:57] + "..."
    if not where:
        return f"the body must be a JSON object, got {type(got).__name__}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"{where} must be an object, got {shown}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        op = {"greater_than_equal": ">=", "less_than_equal": "<=", "greater_than": ">", "less_than": "<"}[kind]
        return f"{where} must be {op} {list((e.get('ctx') or {}).values())[0]}, got {shown}"
    if kind == "value_error":
        return f"{where} {str(e.get('msg', '')).removeprefix('Value error, ')}, got {shown}"
    if kind == "missing":
        return f"{where} is required"
    words = "must be a finite number" if union else _WORDS.get(kind)
    return f"{where} {words}, got {shown}" if words else f"{where}: {e.get('msg', 'invalid')}"


def create_app(service: Service, read_token: Optional[str] = None, write_token: Optional[str] = None):
    """The FastAPI application of ``service`` (requests are served one at a time), with the
    dashboard and the optional access tokens (:mod:`jaxbandits.apps.dashboard`).

    Args:
        service: the :class:`Service` to serve.
        read_token: the token the reading routes require (``None``: open).
        write_token: the token the writing routes require (``None``: open).

    Returns:
        fastapi.FastAPI: the application (``POST /decide``, ``/feedback``, ``/advance``,
        ``GET /stats``, ``/health`` and the dashboard's routes).

    Example:
        >>> import os, tempfile
        >>> from fastapi.testclient import TestClient  # doctest: +SKIP
        >>> cfg = ServeConfig(arms=["a", "b"], policy={"name": "ucb1"}, channel={"kind": "attributed"})
        >>> svc = Service(cfg, os.path.join(tempfile.mkdtemp(), "serve.db"))  # doctest: +SKIP
        >>> client = TestClient(create_app(svc))  # doctest: +SKIP
        >>> client.get("/health").json()  # doctest: +SKIP
        {'ok': True, 'log_seq': 0}
        >>> client.post("/decide", json={"n": 2}).json()  # doctest: +SKIP
        {'ids': [0, 1], 'arms': ['a', 'a']}
    """
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    app = FastAPI(title="jaxbandits serve", description=f"{service.policy.name} on {service.channel}")
    limit = 4096 + 200 * service.config.max_batch  # bytes: a request larger than max_batch events is refused unread

    def _err(status, msg):
        return JSONResponse({"error": msg}, status_code=status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc):
        errs = exc.errors()
        e = errs[0] if errs else {}
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
        if e.get("type") == "json_invalid":
            return _err(400, f"malformed JSON: {e.get('msg', '')}".strip())
        return _err(422, f"{where or 'body'}: {e.get('msg', 'invalid')}")

    @app.exception_handler(BadRequest)
    async def _bad(request, exc):
        return _err(exc.status, str(exc))

    Decide, Feedback, Advance = request_models()
    allowed = {Decide: {False: ("n", "now")}, Feedback: {False: ("events", "now"), True: ("id", "reward", "arm")},
               Advance: {False: ("now",)}}

    async def _body(request: Request, model):
        """The request's body, read up to the size limit, parsed and validated by ``model``."""
        from pydantic import ValidationError

        cl = request.headers.get("content-length")
        if cl is not None and cl.isdigit() and int(cl) > limit:
            raise BadRequest(f"request body of {cl} bytes is larger than {limit} (max_batch "
                             f"{service.config.max_batch})", 413)
        raw = await request.body()
        if len(raw) > limit:
            raise BadRequest(f"request body larger than {limit} bytes (max_batch {service.config.max_batch})", 413)
        try:
            return model.model_validate_json(raw if raw.strip() else b"{}")
        except ValidationError as e:
            errs = e.errors()
            if errs and errs[0].get("type") == "json_invalid":
                msg = str(errs[0].get("msg", ""))
                if "recursion limit" in msg:  # a body nested deeper than the parser allows
                    raise BadRequest("JSON nested too deeply: the bodies of this API are {\"n\": ...} or "
                                     "{\"events\": [{...}, ...]}", 400) from None
                raise BadRequest(f"malformed JSON: {msg.removeprefix('Invalid JSON: ')}", 400) from None
            raise BadRequest(_validation_message(errs, allowed[model])) from None

    def _schema(model):  # the body's schema in the OpenAPI document (/docs)
        return {"requestBody": {"required": model is not Decide,
                                "content": {"application/json": {"schema": model.model_json_schema()}}}}

    # The handlers are ``async`` and never await while the learner runs: requests are applied one
    # at a time, in the order the log records them.
    @app.post("/decide", openapi_extra=_schema(Decide))
    async def decide(request: Request):
        body = await _body(request, Decide)
        return service.decide(body.n, body.now)

    @app.post("/feedback", openapi_extra=_schema(Feedback))
    async def feedback(request: Request):
        body = await _body(request, Feedback)
        return service.feedback([e.model_dump(exclude_unset=True) for e in body.events], body.now)

    @app.post("/advance", openapi_extra=_schema(Advance))
    async def advance(request: Request):
        body = await _body(request, Advance)
        return service.advance(body.now)

    @app.get("/stats")
    async def stats():
        return service.stats()

    @app.get("/health")
    async def health():
        return {"ok": True, "log_seq": service.seq}

    from ..dashboard import install

    install(app, service, read_token=read_token, write_token=write_token)
    return app


def run(config: ServeConfig, db: str, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning"):
    """Start the service and serve it with uvicorn until interrupted.

    Args:
        config: the :class:`ServeConfig`.
        db: the SQLite database's path (see :class:`Service`).
        host: the address to listen on (default ``127.0.0.1``).
        port: the port (default 8000).
        log_level: uvicorn's log level (default ``"warning"``).

    Returns:
        None, once the server stops.

    Raises:
        ImportError: FastAPI or uvicorn is not installed (``pip install 'jaxbandits[serve]'``).
        ValueError: bad access tokens in the environment, or a database the service refuses.

    Example:
        >>> from jaxbandits.apps.serve import load_config
        >>> cfg = load_config("serve.toml")  # doctest: +SKIP
        >>> run(cfg, "serve.db", port=8000)  # doctest: +SKIP
    """
    try:
        import uvicorn
    except ImportError:
        raise ImportError("jaxbandits serve needs FastAPI and uvicorn: pip install 'jaxbandits[serve]'") from None
    from ..dashboard import tokens_from_env

    read_token, write_token = tokens_from_env()  # checked before anything compiles
    service = Service(config, db)
    app = create_app(service, read_token, write_token)
    print(f"jaxbandits serve: {service.policy.name} on {service.channel}, {len(config.arms)} arms, db {db} "
          f"(recovered {service.seq} logged requests, {service.recovered_events} replayed), http://{host}:{port}",
          flush=True)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        service.close()
    return 0
