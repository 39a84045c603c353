"""Checks a raw JSON answer against a botocore output shape: every member known, types right,
required members present, enum values in their enum. Shared by the scripts/check-*-boto3 checks."""


def check_json(shape, value, path, problems):
    t = shape.type_name
    if t == 'structure':
        if not isinstance(value, dict):
            problems.append(f"{path}: expected object"); return
        for req in shape.metadata.get('required', []):
            if req not in value: problems.append(f"{path}: missing required {req}")
        for k, v in value.items():
            if k not in shape.members: problems.append(f"{path}: unknown member {k}"); continue
            check_json(shape.members[k], v, f"{path}.{k}", problems)
    elif t == 'list':
        if not isinstance(value, list): problems.append(f"{path}: expected list"); return
        for i, v in enumerate(value): check_json(shape.member, v, f"{path}[{i}]", problems)
    elif t == 'map':
        if not isinstance(value, dict): problems.append(f"{path}: expected map"); return
        for k, v in value.items(): check_json(shape.value, v, f"{path}[{k}]", problems)
    elif t in ('long', 'integer'):
        if not isinstance(value, int) or isinstance(value, bool): problems.append(f"{path}: expected integer, got {value!r}")
    elif t in ('double', 'float', 'timestamp'):
        if not isinstance(value, (int, float)) or isinstance(value, bool): problems.append(f"{path}: expected a number, got {value!r}")
    elif t == 'boolean':
        if not isinstance(value, bool): problems.append(f"{path}: expected boolean")
    elif t == 'string':
        if not isinstance(value, str): problems.append(f"{path}: expected string, got {value!r}")
        elif 'enum' in shape.metadata and value not in shape.metadata['enum']: problems.append(f"{path}: {value} not in enum")
