"""Glow's name rules (lib/Support/Support.cpp `legalizeName`, `Module::uniqueName`), and the
names a bundle must not take because its header and object are used from C and C++."""

from __future__ import annotations

import re
import zlib

_MAX_NAME = 500


def legalize_name(name: str, max_length: int = _MAX_NAME) -> str:
    """Every char outside [A-Za-z0-9_] becomes `_`; a leading digit or empty name gets `A`; a
    name longer than `max_length` is cut and given a hash of the whole (`_trunc_<crc32>`)."""
    legal = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not legal or legal[0].isdigit():
        legal = "A" + legal
    if len(legal) > max_length:
        suffix = f"_trunc_{zlib.crc32(legal.encode()):08x}"
        legal = legal[:max_length - len(suffix)] + suffix
    return legal


class UniqueNames:
    """Hands out legal names, adding `__<k>` (smallest free k >= 1) on a collision."""

    def __init__(self) -> None:
        self.taken: set[str] = set()

    def __call__(self, name: str) -> str:
        name = legalize_name(name)
        candidate, k = name, 1
        while candidate in self.taken:
            candidate, k = f"{name}__{k}", k + 1
        self.taken.add(candidate)
        return candidate


# ----------------------------------------------------------------------------- reserved C names

C_KEYWORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _BitInt _Bool _Complex _Decimal128 _Decimal32 _Decimal64 _Generic _Imaginary
    _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false nullptr static_assert
    thread_local true typeof typeof_unqual
""".split())
"""C23's keywords (C11's `_Xxx` spellings included)."""

CXX_KEYWORDS = frozenset("""
    and and_eq asm bitand bitor catch char16_t char32_t char8_t class co_await co_return co_yield compl concept
    const_cast consteval constinit decltype delete dynamic_cast explicit export friend mutable namespace new
    noexcept not not_eq operator or or_eq private protected public reinterpret_cast requires static_cast template
    this throw try typeid typename using virtual wchar_t xor xor_eq
""".split())
"""C++20's keywords beyond C's: the header is `extern "C"` and included from C++ too."""

_MATH = """acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb ldexp log
    log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma tgamma ceil floor nearbyint
    rint lrint llrint round lround llround trunc fmod remainder remquo copysign nan nextafter nexttoward fdim fmax
    fmin fma""".split()

C_LIBRARY_NAMES = frozenset([
    "main",
    *(f"{f}{suffix}" for f in _MATH for suffix in ("", "f", "l")),
    *"""memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp strcoll strxfrm strchr
    strrchr strspn strcspn strpbrk strstr strtok strlen strerror strdup strndup
    malloc calloc realloc free aligned_alloc abort exit atexit at_quick_exit quick_exit _Exit getenv system
    bsearch qsort abs labs llabs div ldiv lldiv atof atoi atol atoll strtod strtof strtold strtol strtoll strtoul
    strtoull rand srand mblen mbtowc wctomb mbstowcs wcstombs
    printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf puts fputs putc
    fputc putchar getc fgetc getchar fgets fopen fclose fflush fread fwrite fseek ftell rewind remove rename
    tmpfile perror setvbuf setbuf feof ferror clearerr
    isalnum isalpha isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper isxdigit tolower
    toupper
    clock time difftime mktime asctime ctime gmtime localtime strftime signal raise setjmp longjmp errno assert
    offsetof NULL EOF""".split(),
])
"""Identifiers of the C standard library (and `main`): the entry point has external linkage, and
the bundle's object code may itself call `memcpy`, `memset` or `expf`."""

_RESERVED_PATTERNS = re.compile(
    r"_[A-Z_].*"  # reserved for the implementation (C 7.1.3)
    r"|u?int\w*_t"  # <stdint.h> typedefs: int8_t, uint_fast16_t, intptr_t, ...
    r"|U?INT\w*_(MAX|MIN|C|WIDTH)"  # <stdint.h> macros: INT8_MAX, UINT64_C, ...
    r"|(SIZE|PTRDIFF|SIG_ATOMIC|WCHAR|WINT)_(MAX|MIN|WIDTH)")


def is_reserved_c_name(name: str) -> bool:
    """True when `name` cannot be a bundle's C function or macro: a C or C++ keyword, a C
    library identifier, or one of the names C and <stdint.h> reserve."""
    return (name in C_KEYWORDS or name in CXX_KEYWORDS or name in C_LIBRARY_NAMES
            or _RESERVED_PATTERNS.fullmatch(name) is not None)
