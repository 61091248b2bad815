from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AttrType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ATTR_TYPE_UNSPECIFIED: _ClassVar[AttrType]
    INT: _ClassVar[AttrType]
    FLOAT: _ClassVar[AttrType]
    STRING: _ClassVar[AttrType]
    BOOL: _ClassVar[AttrType]
    LONG: _ClassVar[AttrType]
    INTS: _ClassVar[AttrType]
    FLOATS: _ClassVar[AttrType]
    STRINGS: _ClassVar[AttrType]
    BOOLS: _ClassVar[AttrType]
    BLOCK: _ClassVar[AttrType]
    LONGS: _ClassVar[AttrType]
ATTR_TYPE_UNSPECIFIED: AttrType
INT: AttrType
FLOAT: AttrType
STRING: AttrType
BOOL: AttrType
LONG: AttrType
INTS: AttrType
FLOATS: AttrType
STRINGS: AttrType
BOOLS: AttrType
BLOCK: AttrType
LONGS: AttrType

class AttrValue(_message.Message):
    __slots__ = ("type", "i", "f", "s", "b", "l", "ints", "floats", "strings", "bools", "block_idx", "longs")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    I_FIELD_NUMBER: _ClassVar[int]
    F_FIELD_NUMBER: _ClassVar[int]
    S_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    L_FIELD_NUMBER: _ClassVar[int]
    INTS_FIELD_NUMBER: _ClassVar[int]
    FLOATS_FIELD_NUMBER: _ClassVar[int]
    STRINGS_FIELD_NUMBER: _ClassVar[int]
    BOOLS_FIELD_NUMBER: _ClassVar[int]
    BLOCK_IDX_FIELD_NUMBER: _ClassVar[int]
    LONGS_FIELD_NUMBER: _ClassVar[int]
    type: AttrType
    i: int
    f: float
    s: str
    b: bool
    l: int
    ints: _containers.RepeatedScalarFieldContainer[int]
    floats: _containers.RepeatedScalarFieldContainer[float]
    strings: _containers.RepeatedScalarFieldContainer[str]
    bools: _containers.RepeatedScalarFieldContainer[bool]
    block_idx: int
    longs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[_Union[AttrType, str]] = ..., i: _Optional[int] = ..., f: _Optional[float] = ..., s: _Optional[str] = ..., b: _Optional[bool] = ..., l: _Optional[int] = ..., ints: _Optional[_Iterable[int]] = ..., floats: _Optional[_Iterable[float]] = ..., strings: _Optional[_Iterable[str]] = ..., bools: _Optional[_Iterable[bool]] = ..., block_idx: _Optional[int] = ..., longs: _Optional[_Iterable[int]] = ...) -> None: ...

class Bound(_message.Message):
    __slots__ = ("value", "exclusive")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    value: float
    exclusive: bool
    def __init__(self, value: _Optional[float] = ..., exclusive: _Optional[bool] = ...) -> None: ...

class AttrProto(_message.Message):
    __slots__ = ("name", "comment", "type", "default", "min", "max", "choices")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    name: str
    comment: str
    type: AttrType
    default: AttrValue
    min: Bound
    max: Bound
    choices: AttrValue
    def __init__(self, name: _Optional[str] = ..., comment: _Optional[str] = ..., type: _Optional[_Union[AttrType, str]] = ..., default: _Optional[_Union[AttrValue, _Mapping]] = ..., min: _Optional[_Union[Bound, _Mapping]] = ..., max: _Optional[_Union[Bound, _Mapping]] = ..., choices: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...

class VarProto(_message.Message):
    __slots__ = ("name", "comment", "duplicable", "dispensable", "inplace")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    DUPLICABLE_FIELD_NUMBER: _ClassVar[int]
    DISPENSABLE_FIELD_NUMBER: _ClassVar[int]
    INPLACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    comment: str
    duplicable: bool
    dispensable: bool
    inplace: str
    def __init__(self, name: _Optional[str] = ..., comment: _Optional[str] = ..., duplicable: _Optional[bool] = ..., dispensable: _Optional[bool] = ..., inplace: _Optional[str] = ...) -> None: ...

class OpProto(_message.Message):
    __slots__ = ("type", "comment", "inputs", "outputs", "attrs")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    ATTRS_FIELD_NUMBER: _ClassVar[int]
    type: str
    comment: str
    inputs: _containers.RepeatedCompositeFieldContainer[VarProto]
    outputs: _containers.RepeatedCompositeFieldContainer[VarProto]
    attrs: _containers.RepeatedCompositeFieldContainer[AttrProto]
    def __init__(self, type: _Optional[str] = ..., comment: _Optional[str] = ..., inputs: _Optional[_Iterable[_Union[VarProto, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[VarProto, _Mapping]]] = ..., attrs: _Optional[_Iterable[_Union[AttrProto, _Mapping]]] = ...) -> None: ...

class OpDesc(_message.Message):
    __slots__ = ("type", "inputs", "outputs", "attrs", "role", "provider")
    class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        FORWARD: _ClassVar[OpDesc.Role]
        BACKWARD: _ClassVar[OpDesc.Role]
        OPTIMIZE: _ClassVar[OpDesc.Role]
    FORWARD: OpDesc.Role
    BACKWARD: OpDesc.Role
    OPTIMIZE: OpDesc.Role
    class Slot(_message.Message):
        __slots__ = ("name", "vars")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VARS_FIELD_NUMBER: _ClassVar[int]
        name: str
        vars: _containers.RepeatedScalarFieldContainer[str]
        def __init__(self, name: _Optional[str] = ..., vars: _Optional[_Iterable[str]] = ...) -> None: ...
    class Attr(_message.Message):
        __slots__ = ("name", "value")
        NAME_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        name: str
        value: AttrValue
        def __init__(self, name: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...
    class Provider(_message.Message):
        __slots__ = ("plugin", "distribution", "version")
        PLUGIN_FIELD_NUMBER: _ClassVar[int]
        DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
        VERSION_FIELD_NUMBER: _ClassVar[int]
        plugin: str
        distribution: str
        version: str
        def __init__(self, plugin: _Optional[str] = ..., distribution: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...
    TYPE_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    ATTRS_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    type: str
    inputs: _containers.RepeatedCompositeFieldContainer[OpDesc.Slot]
    outputs: _containers.RepeatedCompositeFieldContainer[OpDesc.Slot]
    attrs: _containers.RepeatedCompositeFieldContainer[OpDesc.Attr]
    role: OpDesc.Role
    provider: OpDesc.Provider
    def __init__(self, type: _Optional[str] = ..., inputs: _Optional[_Iterable[_Union[OpDesc.Slot, _Mapping]]] = ..., outputs: _Optional[_Iterable[_Union[OpDesc.Slot, _Mapping]]] = ..., attrs: _Optional[_Iterable[_Union[OpDesc.Attr, _Mapping]]] = ..., role: _Optional[_Union[OpDesc.Role, str]] = ..., provider: _Optional[_Union[OpDesc.Provider, _Mapping]] = ...) -> None: ...

class VarType(_message.Message):
    __slots__ = ()
    class DataType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DATA_TYPE_UNSPECIFIED: _ClassVar[VarType.DataType]
        BOOL: _ClassVar[VarType.DataType]
        INT8: _ClassVar[VarType.DataType]
        INT16: _ClassVar[VarType.DataType]
        INT32: _ClassVar[VarType.DataType]
        INT64: _ClassVar[VarType.DataType]
        UINT8: _ClassVar[VarType.DataType]
        FLOAT16: _ClassVar[VarType.DataType]
        BFLOAT16: _ClassVar[VarType.DataType]
        FLOAT32: _ClassVar[VarType.DataType]
        FLOAT64: _ClassVar[VarType.DataType]
        UINT16: _ClassVar[VarType.DataType]
        UINT32: _ClassVar[VarType.DataType]
        UINT64: _ClassVar[VarType.DataType]
    DATA_TYPE_UNSPECIFIED: VarType.DataType
    BOOL: VarType.DataType
    INT8: VarType.DataType
    INT16: VarType.DataType
    INT32: VarType.DataType
    INT64: VarType.DataType
    UINT8: VarType.DataType
    FLOAT16: VarType.DataType
    BFLOAT16: VarType.DataType
    FLOAT32: VarType.DataType
    FLOAT64: VarType.DataType
    UINT16: VarType.DataType
    UINT32: VarType.DataType
    UINT64: VarType.DataType
    def __init__(self) -> None: ...

class ParameterInfo(_message.Message):
    __slots__ = ("trainable", "initializer", "initializer_attrs", "optimize_attrs")
    TRAINABLE_FIELD_NUMBER: _ClassVar[int]
    INITIALIZER_FIELD_NUMBER: _ClassVar[int]
    INITIALIZER_ATTRS_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZE_ATTRS_FIELD_NUMBER: _ClassVar[int]
    trainable: bool
    initializer: str
    initializer_attrs: _containers.RepeatedCompositeFieldContainer[OpDesc.Attr]
    optimize_attrs: _containers.RepeatedCompositeFieldContainer[OpDesc.Attr]
    def __init__(self, trainable: _Optional[bool] = ..., initializer: _Optional[str] = ..., initializer_attrs: _Optional[_Iterable[_Union[OpDesc.Attr, _Mapping]]] = ..., optimize_attrs: _Optional[_Iterable[_Union[OpDesc.Attr, _Mapping]]] = ...) -> None: ...

class VarDesc(_message.Message):
    __slots__ = ("name", "dtype", "shape", "persistable", "is_data", "stop_gradient", "parameter")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    PERSISTABLE_FIELD_NUMBER: _ClassVar[int]
    IS_DATA_FIELD_NUMBER: _ClassVar[int]
    STOP_GRADIENT_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    name: str
    dtype: VarType.DataType
    shape: _containers.RepeatedScalarFieldContainer[int]
    persistable: bool
    is_data: bool
    stop_gradient: bool
    parameter: ParameterInfo
    def __init__(self, name: _Optional[str] = ..., dtype: _Optional[_Union[VarType.DataType, str]] = ..., shape: _Optional[_Iterable[int]] = ..., persistable: _Optional[bool] = ..., is_data: _Optional[bool] = ..., stop_gradient: _Optional[bool] = ..., parameter: _Optional[_Union[ParameterInfo, _Mapping]] = ...) -> None: ...

class BlockDesc(_message.Message):
    __slots__ = ("idx", "parent_idx", "vars", "ops")
    IDX_FIELD_NUMBER: _ClassVar[int]
    PARENT_IDX_FIELD_NUMBER: _ClassVar[int]
    VARS_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    idx: int
    parent_idx: int
    vars: _containers.RepeatedCompositeFieldContainer[VarDesc]
    ops: _containers.RepeatedCompositeFieldContainer[OpDesc]
    def __init__(self, idx: _Optional[int] = ..., parent_idx: _Optional[int] = ..., vars: _Optional[_Iterable[_Union[VarDesc, _Mapping]]] = ..., ops: _Optional[_Iterable[_Union[OpDesc, _Mapping]]] = ...) -> None: ...

class ProgramDesc(_message.Message):
    __slots__ = ("blocks", "version", "random_seed")
    BLOCKS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RANDOM_SEED_FIELD_NUMBER: _ClassVar[int]
    blocks: _containers.RepeatedCompositeFieldContainer[BlockDesc]
    version: int
    random_seed: int
    def __init__(self, blocks: _Optional[_Iterable[_Union[BlockDesc, _Mapping]]] = ..., version: _Optional[int] = ..., random_seed: _Optional[int] = ...) -> None: ...

class KernelDef(_message.Message):
    __slots__ = ("device", "dtypes", "python", "native")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    DTYPES_FIELD_NUMBER: _ClassVar[int]
    PYTHON_FIELD_NUMBER: _ClassVar[int]
    NATIVE_FIELD_NUMBER: _ClassVar[int]
    device: str
    dtypes: _containers.RepeatedScalarFieldContainer[VarType.DataType]
    python: str
    native: str
    def __init__(self, device: _Optional[str] = ..., dtypes: _Optional[_Iterable[_Union[VarType.DataType, str]]] = ..., python: _Optional[str] = ..., native: _Optional[str] = ...) -> None: ...

class OpDef(_message.Message):
    __slots__ = ("proto", "kernels", "shape_rule", "grad_rule", "kernel_dtype_input", "random", "random_rule", "onnx")
    PROTO_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    SHAPE_RULE_FIELD_NUMBER: _ClassVar[int]
    GRAD_RULE_FIELD_NUMBER: _ClassVar[int]
    KERNEL_DTYPE_INPUT_FIELD_NUMBER: _ClassVar[int]
    RANDOM_FIELD_NUMBER: _ClassVar[int]
    RANDOM_RULE_FIELD_NUMBER: _ClassVar[int]
    ONNX_FIELD_NUMBER: _ClassVar[int]
    proto: OpProto
    kernels: _containers.RepeatedCompositeFieldContainer[KernelDef]
    shape_rule: str
    grad_rule: str
    kernel_dtype_input: str
    random: bool
    random_rule: str
    onnx: _containers.RepeatedCompositeFieldContainer[OnnxMapping]
    def __init__(self, proto: _Optional[_Union[OpProto, _Mapping]] = ..., kernels: _Optional[_Iterable[_Union[KernelDef, _Mapping]]] = ..., shape_rule: _Optional[str] = ..., grad_rule: _Optional[str] = ..., kernel_dtype_input: _Optional[str] = ..., random: _Optional[bool] = ..., random_rule: _Optional[str] = ..., onnx: _Optional[_Iterable[_Union[OnnxMapping, _Mapping]]] = ...) -> None: ...

class OnnxMapping(_message.Message):
    __slots__ = ("domain", "op_type", "since_version", "until_version", "inputs", "attrs", "fixed", "outputs", "import_rule", "export_rule", "export_only", "export_ignores")
    DOMAIN_FIELD_NUMBER: _ClassVar[int]
    OP_TYPE_FIELD_NUMBER: _ClassVar[int]
    SINCE_VERSION_FIELD_NUMBER: _ClassVar[int]
    UNTIL_VERSION_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    ATTRS_FIELD_NUMBER: _ClassVar[int]
    FIXED_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    IMPORT_RULE_FIELD_NUMBER: _ClassVar[int]
    EXPORT_RULE_FIELD_NUMBER: _ClassVar[int]
    EXPORT_ONLY_FIELD_NUMBER: _ClassVar[int]
    EXPORT_IGNORES_FIELD_NUMBER: _ClassVar[int]
    domain: str
    op_type: str
    since_version: int
    until_version: int
    inputs: _containers.RepeatedCompositeFieldContainer[OnnxInput]
    attrs: _containers.RepeatedCompositeFieldContainer[OnnxAttr]
    fixed: _containers.RepeatedCompositeFieldContainer[OnnxFixed]
    outputs: _containers.RepeatedScalarFieldContainer[str]
    import_rule: str
    export_rule: str
    export_only: bool
    export_ignores: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, domain: _Optional[str] = ..., op_type: _Optional[str] = ..., since_version: _Optional[int] = ..., until_version: _Optional[int] = ..., inputs: _Optional[_Iterable[_Union[OnnxInput, _Mapping]]] = ..., attrs: _Optional[_Iterable[_Union[OnnxAttr, _Mapping]]] = ..., fixed: _Optional[_Iterable[_Union[OnnxFixed, _Mapping]]] = ..., outputs: _Optional[_Iterable[str]] = ..., import_rule: _Optional[str] = ..., export_rule: _Optional[str] = ..., export_only: _Optional[bool] = ..., export_ignores: _Optional[_Iterable[str]] = ...) -> None: ...

class OnnxInput(_message.Message):
    __slots__ = ("index", "input", "attr", "constant")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    CONSTANT_FIELD_NUMBER: _ClassVar[int]
    index: int
    input: str
    attr: str
    constant: bool
    def __init__(self, index: _Optional[int] = ..., input: _Optional[str] = ..., attr: _Optional[str] = ..., constant: _Optional[bool] = ...) -> None: ...

class OnnxAttr(_message.Message):
    __slots__ = ("name", "attr", "default", "only", "ignore", "rule", "export_rule")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTR_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    ONLY_FIELD_NUMBER: _ClassVar[int]
    IGNORE_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    EXPORT_RULE_FIELD_NUMBER: _ClassVar[int]
    name: str
    attr: str
    default: AttrValue
    only: _containers.RepeatedScalarFieldContainer[str]
    ignore: bool
    rule: str
    export_rule: str
    def __init__(self, name: _Optional[str] = ..., attr: _Optional[str] = ..., default: _Optional[_Union[AttrValue, _Mapping]] = ..., only: _Optional[_Iterable[str]] = ..., ignore: _Optional[bool] = ..., rule: _Optional[str] = ..., export_rule: _Optional[str] = ...) -> None: ...

class OnnxFixed(_message.Message):
    __slots__ = ("attr", "value")
    ATTR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    attr: str
    value: AttrValue
    def __init__(self, attr: _Optional[str] = ..., value: _Optional[_Union[AttrValue, _Mapping]] = ...) -> None: ...

class KernelPack(_message.Message):
    __slots__ = ("op", "kernels")
    OP_FIELD_NUMBER: _ClassVar[int]
    KERNELS_FIELD_NUMBER: _ClassVar[int]
    op: str
    kernels: _containers.RepeatedCompositeFieldContainer[KernelDef]
    def __init__(self, op: _Optional[str] = ..., kernels: _Optional[_Iterable[_Union[KernelDef, _Mapping]]] = ...) -> None: ...

class PluginManifest(_message.Message):
    __slots__ = ("comment", "requires_core", "kernel_abi", "rules_module", "kernel_module", "hooks_module", "ops", "kernel_packs")
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_CORE_FIELD_NUMBER: _ClassVar[int]
    KERNEL_ABI_FIELD_NUMBER: _ClassVar[int]
    RULES_MODULE_FIELD_NUMBER: _ClassVar[int]
    KERNEL_MODULE_FIELD_NUMBER: _ClassVar[int]
    HOOKS_MODULE_FIELD_NUMBER: _ClassVar[int]
    OPS_FIELD_NUMBER: _ClassVar[int]
    KERNEL_PACKS_FIELD_NUMBER: _ClassVar[int]
    comment: str
    requires_core: str
    kernel_abi: int
    rules_module: str
    kernel_module: str
    hooks_module: str
    ops: _containers.RepeatedCompositeFieldContainer[OpDef]
    kernel_packs: _containers.RepeatedCompositeFieldContainer[KernelPack]
    def __init__(self, comment: _Optional[str] = ..., requires_core: _Optional[str] = ..., kernel_abi: _Optional[int] = ..., rules_module: _Optional[str] = ..., kernel_module: _Optional[str] = ..., hooks_module: _Optional[str] = ..., ops: _Optional[_Iterable[_Union[OpDef, _Mapping]]] = ..., kernel_packs: _Optional[_Iterable[_Union[KernelPack, _Mapping]]] = ...) -> None: ...
