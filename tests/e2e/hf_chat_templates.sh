#!/usr/bin/env bash
# autotrain's chat templates against Hugging Face's: every case of
# tests/data/hf_reference/chat_cases.json (the real chat_template of Llama 3 and Qwen3 from their
# tokenizer_config.json, AutoTrain's chatml and zephyr, hand-written templates for the harder
# parts of the subset; conversations with and without a system prompt, several turns, whitespace,
# unicode, Qwen3's thinking and tools, add_generation_prompt both ways) is rendered by
#   - tests/data/chat_render (autotrain's ChatTemplate),
#   - @huggingface/jinja, Hugging Face's JavaScript port (chat_reference.mjs), and
#   - Python's jinja2 configured as transformers' apply_chat_template configures it, when jinja2
#     is installed,
# and the texts must be identical (or all three an error). Templates marked "reference": "jinja2"
# are where @huggingface/jinja is known to differ from Python; only jinja2 judges those.
set -euo pipefail
: "${AUTOTRAIN_BIN:?set by ctest}" "${AUTOTRAIN_SOURCE_DIR:?set by ctest}"
reference=$AUTOTRAIN_SOURCE_DIR/tests/data/hf_reference
modules=$(dirname "$AUTOTRAIN_BIN")/hf-reference  # npm packages, kept with the build
render_bin=$(dirname "$AUTOTRAIN_BIN")/tests/chat_render
[[ -x $render_bin ]] || { echo "$render_bin is missing: build the chat_render target" >&2; exit 1; }
timeout 300 bash "$reference/install.sh" "$modules"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

"$render_bin" "$reference/chat_cases.json" "$modules/node_modules" expanded.json ours.json
node "$reference/chat_reference.mjs" --modules "$modules" expanded.json huggingface.json

# transformers' environment (utils/chat_template_utils.py): a sandbox with trim_blocks and
# lstrip_blocks, loopcontrols, the {% generation %} tag, its tojson, raise_exception and
# strftime_now; the variables of apply_chat_template.
if python3 -c "import jinja2" 2>/dev/null; then
  python3 - expanded.json jinja2.json <<'PY'
import json, sys
from datetime import datetime
import jinja2, jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

class Generation(jinja2.ext.Extension):
    tags = {"generation"}
    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)
    def _body(self, caller):
        return caller()

def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)

def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)

env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                    extensions=[Generation, jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = lambda format: datetime.now().strftime(format)

results = []
for case in json.load(open(sys.argv[1])):
    variables = {k: case[k] for k in ("bos_token", "eos_token") if k in case}
    variables.update(messages=case["messages"], tools=None, documents=None,
                     add_generation_prompt=case["add_generation_prompt"])
    variables.update(case["extra"])
    try:
        results.append({"name": case["name"],
                        "text": env.from_string(case["template"]).render(**variables)})
    except Exception as e:
        results.append({"name": case["name"], "error": f"{type(e).__name__}: {e}"})
json.dump(results, open(sys.argv[2], "w"), ensure_ascii=False, indent=0)
PY
else
  echo "Python's jinja2 is not installed: comparing with @huggingface/jinja only"
fi

python3 - expanded.json ours.json huggingface.json jinja2.json \
  "$modules/node_modules/@huggingface/jinja/package.json" <<'PY'
import json, os, sys
cases, ours, hf = (json.load(open(p)) for p in sys.argv[1:4])
j2 = json.load(open(sys.argv[4])) if os.path.exists(sys.argv[4]) else None
hf_version = json.load(open(sys.argv[5]))["version"]
assert len(cases) == len(ours) == len(hf), (len(cases), len(ours), len(hf))

def same(a, b):
    return ("error" in a and "error" in b) or ("text" in a and a.get("text") == b.get("text"))

def show(value):
    return repr(value.get("text", "error: " + value.get("error", "")))[:1500]

bad = []
matched_hf = matched_j2 = jinja2_only = 0
for i, case in enumerate(cases):
    references = []
    if case["reference"] == "all":
        references.append(("@huggingface/jinja", hf[i]))
    else:
        jinja2_only += 1
    if j2 is not None:
        references.append(("jinja2", j2[i]))
    for name, ref in references:
        if same(ours[i], ref):
            matched_hf += name != "jinja2"
            matched_j2 += name == "jinja2"
        else:
            bad.append(f"{case['name']} differs from {name}:\n  {name:18} {show(ref)}\n"
                       f"  {'autotrain':18} {show(ours[i])}")
for line in bad[:10]:
    print(line)
assert not bad, f"{len(bad)} mismatches"
summary = f"{matched_hf} of {len(cases)} cases identical to @huggingface/jinja {hf_version}"
if j2 is not None:
    import jinja2
    summary += f", {matched_j2} identical to Python jinja2 {jinja2.__version__}"
    summary += f" ({jinja2_only} where @huggingface/jinja differs from Python: jinja2's rendering)"
else:
    summary += f" ({jinja2_only} jinja2-only cases not checked: jinja2 is not installed)"
print(summary)
PY
echo "hf_chat_templates: all checks passed"
