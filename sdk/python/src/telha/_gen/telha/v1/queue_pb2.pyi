from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
JOB_STATE_CANCELLED: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_DEAD: JobState
JOB_STATE_FAILED: JobState
JOB_STATE_LEASED: JobState
JOB_STATE_PENDING: JobState
JOB_STATE_UNSPECIFIED: JobState
LIST_ORDER_NEWEST_FIRST: ListOrder
LIST_ORDER_OLDEST_FIRST: ListOrder
LIST_ORDER_UNSPECIFIED: ListOrder
ORDER_DEAD_POLICY_BLOCK: OrderDeadPolicy
ORDER_DEAD_POLICY_RELEASE: OrderDeadPolicy
ORDER_DEAD_POLICY_UNSPECIFIED: OrderDeadPolicy
SUPERSEDE_MODE_LEASED: SupersedeMode
SUPERSEDE_MODE_PENDING: SupersedeMode
SUPERSEDE_MODE_UNSPECIFIED: SupersedeMode

class BackupRequest(_message.Message):
    __slots__ = ["path"]
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class BackupResponse(_message.Message):
    __slots__ = ["duration_us", "jobs", "path", "pause_us", "rows"]
    DURATION_US_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    PAUSE_US_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    duration_us: int
    jobs: int
    path: str
    pause_us: int
    rows: int
    def __init__(self, path: _Optional[str] = ..., jobs: _Optional[int] = ..., rows: _Optional[int] = ..., pause_us: _Optional[int] = ..., duration_us: _Optional[int] = ...) -> None: ...

class BlockedKey(_message.Message):
    __slots__ = ["head", "order_key", "tenant", "waiting"]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    ORDER_KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    head: Job
    order_key: str
    tenant: str
    waiting: int
    def __init__(self, tenant: _Optional[str] = ..., order_key: _Optional[str] = ..., head: _Optional[_Union[Job, _Mapping]] = ..., waiting: _Optional[int] = ...) -> None: ...

class CancelMatchingRequest(_message.Message):
    __slots__ = ["kind_prefix", "scope", "state"]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    kind_prefix: str
    scope: Scope
    state: JobState
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., state: _Optional[_Union[JobState, str]] = ..., kind_prefix: _Optional[str] = ...) -> None: ...

class CancelMatchingResponse(_message.Message):
    __slots__ = ["cancelled"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    def __init__(self, cancelled: _Optional[int] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ["job_id", "reason"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class CheckpointRequest(_message.Message):
    __slots__ = ["continuation", "fence"]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    continuation: bytes
    fence: Fence
    def __init__(self, fence: _Optional[_Union[Fence, _Mapping]] = ..., continuation: _Optional[bytes] = ...) -> None: ...

class CheckpointResponse(_message.Message):
    __slots__ = ["lease_deadline_us"]
    LEASE_DEADLINE_US_FIELD_NUMBER: _ClassVar[int]
    lease_deadline_us: int
    def __init__(self, lease_deadline_us: _Optional[int] = ...) -> None: ...

class ClearKindLimitRequest(_message.Message):
    __slots__ = ["kind_prefix"]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    kind_prefix: str
    def __init__(self, kind_prefix: _Optional[str] = ...) -> None: ...

class ClearKindLimitResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ClearTenantLimitRequest(_message.Message):
    __slots__ = ["tenant"]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    def __init__(self, tenant: _Optional[str] = ...) -> None: ...

class ClearTenantLimitResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CompleteEachRequest(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[CompleteRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[CompleteRequest, _Mapping]]] = ...) -> None: ...

class CompleteEachResponse(_message.Message):
    __slots__ = ["outcomes"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ["fence", "result", "successors"]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    fence: Fence
    result: bytes
    successors: _containers.RepeatedCompositeFieldContainer[NewJob]
    def __init__(self, fence: _Optional[_Union[Fence, _Mapping]] = ..., successors: _Optional[_Iterable[_Union[NewJob, _Mapping]]] = ..., result: _Optional[bytes] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ["job", "successors"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    SUCCESSORS_FIELD_NUMBER: _ClassVar[int]
    job: Job
    successors: _containers.RepeatedCompositeFieldContainer[EnqueueResult]
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., successors: _Optional[_Iterable[_Union[EnqueueResult, _Mapping]]] = ...) -> None: ...

class CountRow(_message.Message):
    __slots__ = ["count", "kind", "state"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    count: int
    kind: str
    state: JobState
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., kind: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CountsRequest(_message.Message):
    __slots__ = ["scope"]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ...) -> None: ...

class CountsResponse(_message.Message):
    __slots__ = ["rows"]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[CountRow]
    def __init__(self, rows: _Optional[_Iterable[_Union[CountRow, _Mapping]]] = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ["name", "scope"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DiscardRequest(_message.Message):
    __slots__ = ["job_id", "reason"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DiscardResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ["jobs", "scope"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[NewJob]
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[NewJob, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[EnqueueResult]
    def __init__(self, results: _Optional[_Iterable[_Union[EnqueueResult, _Mapping]]] = ...) -> None: ...

class EnqueueEachAnswer(_message.Message):
    __slots__ = ["error", "result"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    error: ItemOutcome
    result: EnqueueResult
    def __init__(self, result: _Optional[_Union[EnqueueResult, _Mapping]] = ..., error: _Optional[_Union[ItemOutcome, _Mapping]] = ...) -> None: ...

class EnqueueEachRequest(_message.Message):
    __slots__ = ["jobs", "scope"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[NewJob]
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[NewJob, _Mapping]]] = ...) -> None: ...

class EnqueueEachResponse(_message.Message):
    __slots__ = ["answers"]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[EnqueueEachAnswer]
    def __init__(self, answers: _Optional[_Iterable[_Union[EnqueueEachAnswer, _Mapping]]] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ["job", "scope"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    job: NewJob
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., job: _Optional[_Union[NewJob, _Mapping]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ["result"]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: EnqueueResult
    def __init__(self, result: _Optional[_Union[EnqueueResult, _Mapping]] = ...) -> None: ...

class EnqueueResult(_message.Message):
    __slots__ = ["created", "job"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    created: bool
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., created: bool = ...) -> None: ...

class FailEachRequest(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[FailRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[FailRequest, _Mapping]]] = ...) -> None: ...

class FailEachResponse(_message.Message):
    __slots__ = ["outcomes"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ...) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ["error", "fence", "permanent"]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    PERMANENT_FIELD_NUMBER: _ClassVar[int]
    error: str
    fence: Fence
    permanent: bool
    def __init__(self, fence: _Optional[_Union[Fence, _Mapping]] = ..., error: _Optional[str] = ..., permanent: bool = ...) -> None: ...

class FailResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class Fence(_message.Message):
    __slots__ = ["job_id", "lease_generation", "worker_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_generation: int
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., worker_id: _Optional[str] = ..., lease_generation: _Optional[int] = ...) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ["name", "scope"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class GetScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ["fence", "progress"]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    fence: Fence
    progress: str
    def __init__(self, fence: _Optional[_Union[Fence, _Mapping]] = ..., progress: _Optional[str] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ["lease_deadline_us"]
    LEASE_DEADLINE_US_FIELD_NUMBER: _ClassVar[int]
    lease_deadline_us: int
    def __init__(self, lease_deadline_us: _Optional[int] = ...) -> None: ...

class ItemOutcome(_message.Message):
    __slots__ = ["code", "field", "message", "reason"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    code: int
    field: str
    message: str
    reason: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., reason: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["attempt_deadline_us", "attempts", "continuation", "created_at_us", "debounce_until_us", "effective_max_attempts", "events", "idempotency_key", "job_id", "kind", "lease_deadline_us", "lease_generation", "max_attempts", "not_before_us", "order_key", "order_on_dead", "order_waiting", "payload", "priority", "progress", "result", "state", "supersede_key", "superseded_by", "tenant", "timeout_secs", "trace_context", "worker_id"]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_DEADLINE_US_FIELD_NUMBER: _ClassVar[int]
    CONTINUATION_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_UNTIL_US_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_US_FIELD_NUMBER: _ClassVar[int]
    LEASE_GENERATION_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_US_FIELD_NUMBER: _ClassVar[int]
    ORDER_KEY_FIELD_NUMBER: _ClassVar[int]
    ORDER_ON_DEAD_FIELD_NUMBER: _ClassVar[int]
    ORDER_WAITING_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDE_KEY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt_deadline_us: int
    attempts: int
    continuation: bytes
    created_at_us: int
    debounce_until_us: int
    effective_max_attempts: int
    events: _containers.RepeatedCompositeFieldContainer[JobEvent]
    idempotency_key: str
    job_id: str
    kind: str
    lease_deadline_us: int
    lease_generation: int
    max_attempts: int
    not_before_us: int
    order_key: str
    order_on_dead: OrderDeadPolicy
    order_waiting: bool
    payload: bytes
    priority: int
    progress: str
    result: bytes
    state: JobState
    supersede_key: str
    superseded_by: str
    tenant: str
    timeout_secs: int
    trace_context: TraceContext
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., tenant: _Optional[str] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., priority: _Optional[int] = ..., created_at_us: _Optional[int] = ..., state: _Optional[_Union[JobState, str]] = ..., attempts: _Optional[int] = ..., lease_generation: _Optional[int] = ..., worker_id: _Optional[str] = ..., lease_deadline_us: _Optional[int] = ..., not_before_us: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., max_attempts: _Optional[int] = ..., continuation: _Optional[bytes] = ..., events: _Optional[_Iterable[_Union[JobEvent, _Mapping]]] = ..., effective_max_attempts: _Optional[int] = ..., attempt_deadline_us: _Optional[int] = ..., timeout_secs: _Optional[int] = ..., result: _Optional[bytes] = ..., progress: _Optional[str] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ..., supersede_key: _Optional[str] = ..., superseded_by: _Optional[str] = ..., debounce_until_us: _Optional[int] = ..., order_key: _Optional[str] = ..., order_on_dead: _Optional[_Union[OrderDeadPolicy, str]] = ..., order_waiting: bool = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ["at_us", "detail", "transition"]
    AT_US_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    TRANSITION_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    detail: str
    transition: str
    def __init__(self, at_us: _Optional[int] = ..., transition: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class KindLimit(_message.Message):
    __slots__ = ["concurrency", "kind_prefix", "leased", "rate", "set_at_us", "set_by", "tokens"]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    LEASED_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    SET_AT_US_FIELD_NUMBER: _ClassVar[int]
    SET_BY_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    kind_prefix: str
    leased: int
    rate: str
    set_at_us: int
    set_by: str
    tokens: int
    def __init__(self, kind_prefix: _Optional[str] = ..., concurrency: _Optional[int] = ..., rate: _Optional[str] = ..., set_at_us: _Optional[int] = ..., set_by: _Optional[str] = ..., leased: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class KindPause(_message.Message):
    __slots__ = ["everywhere", "kind_prefix", "paused_at_us", "paused_by", "scope"]
    EVERYWHERE_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    PAUSED_AT_US_FIELD_NUMBER: _ClassVar[int]
    PAUSED_BY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    everywhere: bool
    kind_prefix: str
    paused_at_us: int
    paused_by: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., everywhere: bool = ..., kind_prefix: _Optional[str] = ..., paused_at_us: _Optional[int] = ..., paused_by: _Optional[str] = ...) -> None: ...

class LeaseOutcome(_message.Message):
    __slots__ = ["lease_deadline_us", "outcome"]
    LEASE_DEADLINE_US_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    lease_deadline_us: int
    outcome: ItemOutcome
    def __init__(self, outcome: _Optional[_Union[ItemOutcome, _Mapping]] = ..., lease_deadline_us: _Optional[int] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ["kinds", "limit", "scope", "wait_ms", "worker_id"]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    kinds: _containers.RepeatedScalarFieldContainer[str]
    limit: int
    scope: Scope
    wait_ms: int
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., limit: _Optional[int] = ..., wait_ms: _Optional[int] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ...) -> None: ...

class LeaseResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class ListBlockedKeysRequest(_message.Message):
    __slots__ = ["limit", "scope"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    limit: int
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., limit: _Optional[int] = ...) -> None: ...

class ListBlockedKeysResponse(_message.Message):
    __slots__ = ["keys"]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[BlockedKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[BlockedKey, _Mapping]]] = ...) -> None: ...

class ListKindLimitsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListKindLimitsResponse(_message.Message):
    __slots__ = ["limits"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[KindLimit]
    def __init__(self, limits: _Optional[_Iterable[_Union[KindLimit, _Mapping]]] = ...) -> None: ...

class ListPausesRequest(_message.Message):
    __slots__ = ["scope"]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ...) -> None: ...

class ListPausesResponse(_message.Message):
    __slots__ = ["pauses"]
    PAUSES_FIELD_NUMBER: _ClassVar[int]
    pauses: _containers.RepeatedCompositeFieldContainer[KindPause]
    def __init__(self, pauses: _Optional[_Iterable[_Union[KindPause, _Mapping]]] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ["include_system", "kind_prefix", "limit", "order", "page_token", "scope", "state"]
    INCLUDE_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ORDER_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    include_system: bool
    kind_prefix: str
    limit: int
    order: ListOrder
    page_token: str
    scope: Scope
    state: JobState
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., state: _Optional[_Union[JobState, str]] = ..., kind_prefix: _Optional[str] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ..., order: _Optional[_Union[ListOrder, str]] = ..., include_system: bool = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ["jobs", "next_page_token"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ["limit", "page_token", "scope"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    limit: int
    page_token: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., limit: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ["next_page_token", "schedules"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTenantLimitsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListTenantLimitsResponse(_message.Message):
    __slots__ = ["limits"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[TenantLimit]
    def __init__(self, limits: _Optional[_Iterable[_Union[TenantLimit, _Mapping]]] = ...) -> None: ...

class NewJob(_message.Message):
    __slots__ = ["debounce_max_ms", "debounce_ms", "delay_ms", "idempotency_key", "kind", "max_attempts", "not_before_us", "order_key", "order_on_dead", "payload", "priority", "supersede", "supersede_key", "timeout_secs", "trace_context"]
    DEBOUNCE_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_MS_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_US_FIELD_NUMBER: _ClassVar[int]
    ORDER_KEY_FIELD_NUMBER: _ClassVar[int]
    ORDER_ON_DEAD_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDE_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDE_KEY_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_SECS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    debounce_max_ms: int
    debounce_ms: int
    delay_ms: int
    idempotency_key: str
    kind: str
    max_attempts: int
    not_before_us: int
    order_key: str
    order_on_dead: OrderDeadPolicy
    payload: bytes
    priority: int
    supersede: SupersedeMode
    supersede_key: str
    timeout_secs: int
    trace_context: TraceContext
    def __init__(self, kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., priority: _Optional[int] = ..., delay_ms: _Optional[int] = ..., not_before_us: _Optional[int] = ..., max_attempts: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., timeout_secs: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ..., supersede_key: _Optional[str] = ..., supersede: _Optional[_Union[SupersedeMode, str]] = ..., debounce_ms: _Optional[int] = ..., debounce_max_ms: _Optional[int] = ..., order_key: _Optional[str] = ..., order_on_dead: _Optional[_Union[OrderDeadPolicy, str]] = ...) -> None: ...

class PauseKindsRequest(_message.Message):
    __slots__ = ["everywhere", "kind_prefix", "scope"]
    EVERYWHERE_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    everywhere: bool
    kind_prefix: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., everywhere: bool = ..., kind_prefix: _Optional[str] = ...) -> None: ...

class PauseKindsResponse(_message.Message):
    __slots__ = ["pause"]
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    pause: KindPause
    def __init__(self, pause: _Optional[_Union[KindPause, _Mapping]] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ["batch", "each", "id", "single"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    EACH_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    batch: EnqueueBatchRequest
    each: EnqueueEachRequest
    id: int
    single: EnqueueRequest
    def __init__(self, id: _Optional[int] = ..., single: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., batch: _Optional[_Union[EnqueueBatchRequest, _Mapping]] = ..., each: _Optional[_Union[EnqueueEachRequest, _Mapping]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ["batch", "each", "error", "id", "single"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    EACH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    SINGLE_FIELD_NUMBER: _ClassVar[int]
    batch: EnqueueBatchResponse
    each: EnqueueEachResponse
    error: ItemOutcome
    id: int
    single: EnqueueResponse
    def __init__(self, id: _Optional[int] = ..., single: _Optional[_Union[EnqueueResponse, _Mapping]] = ..., batch: _Optional[_Union[EnqueueBatchResponse, _Mapping]] = ..., each: _Optional[_Union[EnqueueEachResponse, _Mapping]] = ..., error: _Optional[_Union[ItemOutcome, _Mapping]] = ...) -> None: ...

class ReleaseEachRequest(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ReleaseRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[ReleaseRequest, _Mapping]]] = ...) -> None: ...

class ReleaseEachResponse(_message.Message):
    __slots__ = ["outcomes"]
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ...) -> None: ...

class ReleaseKeyRequest(_message.Message):
    __slots__ = ["order_key", "scope"]
    ORDER_KEY_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    order_key: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., order_key: _Optional[str] = ...) -> None: ...

class ReleaseKeyResponse(_message.Message):
    __slots__ = ["next"]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    next: Job
    def __init__(self, next: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ["fence"]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    fence: Fence
    def __init__(self, fence: _Optional[_Union[Fence, _Mapping]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class ResumeKindsRequest(_message.Message):
    __slots__ = ["everywhere", "kind_prefix", "scope"]
    EVERYWHERE_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    everywhere: bool
    kind_prefix: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., everywhere: bool = ..., kind_prefix: _Optional[str] = ...) -> None: ...

class ResumeKindsResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class RetryRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class RetryResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class RunNowRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class RunNowResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class RunScheduleRequest(_message.Message):
    __slots__ = ["name", "scope"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    scope: Scope
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class RunScheduleResponse(_message.Message):
    __slots__ = ["created", "job"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    created: bool
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., created: bool = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ["created_at_us", "cron", "every_secs", "job", "last_due_us", "name", "next_due_us", "paused", "scope", "timezone", "updated_at_us"]
    CREATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_SECS_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    LAST_DUE_US_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_DUE_US_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_US_FIELD_NUMBER: _ClassVar[int]
    created_at_us: int
    cron: str
    every_secs: int
    job: NewJob
    last_due_us: int
    name: str
    next_due_us: int
    paused: bool
    scope: Scope
    timezone: str
    updated_at_us: int
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., name: _Optional[str] = ..., cron: _Optional[str] = ..., timezone: _Optional[str] = ..., every_secs: _Optional[int] = ..., job: _Optional[_Union[NewJob, _Mapping]] = ..., paused: bool = ..., next_due_us: _Optional[int] = ..., last_due_us: _Optional[int] = ..., created_at_us: _Optional[int] = ..., updated_at_us: _Optional[int] = ...) -> None: ...

class Scope(_message.Message):
    __slots__ = ["system", "tenant"]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    system: bool
    tenant: str
    def __init__(self, tenant: _Optional[str] = ..., system: bool = ...) -> None: ...

class SetKindLimitRequest(_message.Message):
    __slots__ = ["concurrency", "kind_prefix", "rate"]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    kind_prefix: str
    rate: str
    def __init__(self, kind_prefix: _Optional[str] = ..., concurrency: _Optional[int] = ..., rate: _Optional[str] = ...) -> None: ...

class SetKindLimitResponse(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: KindLimit
    def __init__(self, limit: _Optional[_Union[KindLimit, _Mapping]] = ...) -> None: ...

class SetTenantLimitRequest(_message.Message):
    __slots__ = ["concurrency", "rate", "tenant", "weight"]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    rate: str
    tenant: str
    weight: int
    def __init__(self, tenant: _Optional[str] = ..., concurrency: _Optional[int] = ..., rate: _Optional[str] = ..., weight: _Optional[int] = ...) -> None: ...

class SetTenantLimitResponse(_message.Message):
    __slots__ = ["limit"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: TenantLimit
    def __init__(self, limit: _Optional[_Union[TenantLimit, _Mapping]] = ...) -> None: ...

class ShowRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ShowResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: Job
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ...) -> None: ...

class TenantLimit(_message.Message):
    __slots__ = ["concurrency", "leased", "rate", "set_at_us", "set_by", "tenant", "tokens", "weight"]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    LEASED_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    SET_AT_US_FIELD_NUMBER: _ClassVar[int]
    SET_BY_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    concurrency: int
    leased: int
    rate: str
    set_at_us: int
    set_by: str
    tenant: str
    tokens: int
    weight: int
    def __init__(self, tenant: _Optional[str] = ..., concurrency: _Optional[int] = ..., rate: _Optional[str] = ..., weight: _Optional[int] = ..., set_at_us: _Optional[int] = ..., set_by: _Optional[str] = ..., leased: _Optional[int] = ..., tokens: _Optional[int] = ...) -> None: ...

class TraceContext(_message.Message):
    __slots__ = ["traceparent", "tracestate"]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    traceparent: str
    tracestate: str
    def __init__(self, traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ["cron", "every_secs", "job", "name", "paused", "scope", "timezone"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_SECS_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    cron: str
    every_secs: int
    job: NewJob
    name: str
    paused: bool
    scope: Scope
    timezone: str
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., name: _Optional[str] = ..., cron: _Optional[str] = ..., timezone: _Optional[str] = ..., every_secs: _Optional[int] = ..., job: _Optional[_Union[NewJob, _Mapping]] = ..., paused: bool = ...) -> None: ...

class UpdateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ["at_us", "detail", "job", "result_bytes", "resume_token", "sequence", "transition"]
    AT_US_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TRANSITION_FIELD_NUMBER: _ClassVar[int]
    at_us: int
    detail: str
    job: Job
    result_bytes: int
    resume_token: str
    sequence: int
    transition: str
    def __init__(self, sequence: _Optional[int] = ..., transition: _Optional[str] = ..., detail: _Optional[str] = ..., at_us: _Optional[int] = ..., job: _Optional[_Union[Job, _Mapping]] = ..., resume_token: _Optional[str] = ..., result_bytes: _Optional[int] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ["job_id", "kind_prefix", "resume_token", "scope", "states"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_PREFIX_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    kind_prefix: str
    resume_token: str
    scope: Scope
    states: _containers.RepeatedScalarFieldContainer[JobState]
    def __init__(self, scope: _Optional[_Union[Scope, _Mapping]] = ..., kind_prefix: _Optional[str] = ..., job_id: _Optional[str] = ..., resume_token: _Optional[str] = ..., states: _Optional[_Iterable[_Union[JobState, str]]] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ["events", "resume_token"]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    RESUME_TOKEN_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[WatchEvent]
    resume_token: str
    def __init__(self, events: _Optional[_Iterable[_Union[WatchEvent, _Mapping]]] = ..., resume_token: _Optional[str] = ...) -> None: ...

class WorkOpen(_message.Message):
    __slots__ = ["jobs_with_answers", "kinds", "scope", "worker_id"]
    JOBS_WITH_ANSWERS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    jobs_with_answers: bool
    kinds: _containers.RepeatedScalarFieldContainer[str]
    scope: Scope
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., kinds: _Optional[_Iterable[str]] = ..., scope: _Optional[_Union[Scope, _Mapping]] = ..., jobs_with_answers: bool = ...) -> None: ...

class WorkRequest(_message.Message):
    __slots__ = ["checkpoints", "completes", "credit", "fails", "heartbeats", "open", "releases", "settle_id"]
    CHECKPOINTS_FIELD_NUMBER: _ClassVar[int]
    COMPLETES_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    FAILS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEATS_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    RELEASES_FIELD_NUMBER: _ClassVar[int]
    SETTLE_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoints: _containers.RepeatedCompositeFieldContainer[CheckpointRequest]
    completes: _containers.RepeatedCompositeFieldContainer[CompleteRequest]
    credit: int
    fails: _containers.RepeatedCompositeFieldContainer[FailRequest]
    heartbeats: _containers.RepeatedCompositeFieldContainer[HeartbeatRequest]
    open: WorkOpen
    releases: _containers.RepeatedCompositeFieldContainer[ReleaseRequest]
    settle_id: int
    def __init__(self, open: _Optional[_Union[WorkOpen, _Mapping]] = ..., credit: _Optional[int] = ..., settle_id: _Optional[int] = ..., completes: _Optional[_Iterable[_Union[CompleteRequest, _Mapping]]] = ..., fails: _Optional[_Iterable[_Union[FailRequest, _Mapping]]] = ..., releases: _Optional[_Iterable[_Union[ReleaseRequest, _Mapping]]] = ..., heartbeats: _Optional[_Iterable[_Union[HeartbeatRequest, _Mapping]]] = ..., checkpoints: _Optional[_Iterable[_Union[CheckpointRequest, _Mapping]]] = ...) -> None: ...

class WorkResponse(_message.Message):
    __slots__ = ["checkpoint_outcomes", "complete_outcomes", "fail_outcomes", "heartbeat_outcomes", "jobs", "release_outcomes", "settle_id"]
    CHECKPOINT_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    FAIL_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    RELEASE_OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    SETTLE_ID_FIELD_NUMBER: _ClassVar[int]
    checkpoint_outcomes: _containers.RepeatedCompositeFieldContainer[LeaseOutcome]
    complete_outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    fail_outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    heartbeat_outcomes: _containers.RepeatedCompositeFieldContainer[LeaseOutcome]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    release_outcomes: _containers.RepeatedCompositeFieldContainer[ItemOutcome]
    settle_id: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., settle_id: _Optional[int] = ..., complete_outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ..., fail_outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ..., release_outcomes: _Optional[_Iterable[_Union[ItemOutcome, _Mapping]]] = ..., heartbeat_outcomes: _Optional[_Iterable[_Union[LeaseOutcome, _Mapping]]] = ..., checkpoint_outcomes: _Optional[_Iterable[_Union[LeaseOutcome, _Mapping]]] = ...) -> None: ...

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OrderDeadPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SupersedeMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ListOrder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
