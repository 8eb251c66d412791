"""The one LLM seam: `get_client` builds every client, and every model call goes through
`LLMClient.chat_json` (or `chat_text` for a plain reply); answers are remembered in a `ResponseCache`.

The parts: client (the client and the one place requests are sent), cache (where answers are remembered),
records (call records, the usage ledger, a call's result), parsing (reading JSON replies) and errors
(backend failures as messages a user can act on). This package re-exports their public names.
"""

from services.llm.cache import MemoryCache, ResponseCache, cache_key
from services.llm.client import MODES, RETRY_PROMPT, SDK_THREADS_PER_CLIENT, LLMClient, get_client
from services.llm.errors import BackendError, describe_error, retry_after
from services.llm.parsing import is_cut_off, loads_lenient, try_parse
from services.llm.records import CallRecord, CallResult, UsageLedger, summarize_records

__all__ = [
    "MODES",
    "RETRY_PROMPT",
    "SDK_THREADS_PER_CLIENT",
    "BackendError",
    "CallRecord",
    "CallResult",
    "LLMClient",
    "MemoryCache",
    "ResponseCache",
    "UsageLedger",
    "cache_key",
    "describe_error",
    "get_client",
    "is_cut_off",
    "loads_lenient",
    "retry_after",
    "summarize_records",
    "try_parse",
]
