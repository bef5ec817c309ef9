"""texel's errors as Python exceptions: one class per status of the C API (texel.h)."""


class NoticeWarning(UserWarning):
    """What a compile tells its caller of the options and the device (a backend that cannot run;
    texture storage or a matrix engine the device lacks) and of the tuning database (a damaged
    line, read around). Issued by :func:`texel.compile` unless ``on_notice`` takes them."""


class Error(Exception):
    """Base of every texel error; ``status`` is the C API's status name."""

    status = "TEXEL_ERROR"


class InvalidArgumentError(Error, ValueError):
    """A bad option or a wrong input: dtype, shape, layout, an unknown name."""

    status = "TEXEL_ERROR_INVALID_ARGUMENT"


class NotFoundError(Error, LookupError):
    """A missing file, device, input or output name."""

    status = "TEXEL_ERROR_NOT_FOUND"


class InvalidModelError(Error):
    """A malformed or inconsistent model, fragment or artifact."""

    status = "TEXEL_ERROR_INVALID_MODEL"


class UnsupportedError(Error):
    """Valid, but not supported here: an op, a device feature, compiling without the compiler."""

    status = "TEXEL_ERROR_UNSUPPORTED"


class DeviceError(Error):
    """An OpenCL call failed."""

    status = "TEXEL_ERROR_DEVICE"


class BuildError(Error):
    """An OpenCL program failed to build."""

    status = "TEXEL_ERROR_BUILD"


class IoError(Error):
    """A file system error."""

    status = "TEXEL_ERROR_IO"


class InternalError(Error):
    """A bug in texel."""

    status = "TEXEL_ERROR_INTERNAL"


# texel_status_t's numbers, in texel.h's order.
BY_STATUS = {
    1: InvalidArgumentError,
    2: NotFoundError,
    3: InvalidModelError,
    4: UnsupportedError,
    5: DeviceError,
    6: BuildError,
    7: IoError,
    8: InternalError,
}
