"""One message class per lint rule: a stable code, a severity, a one-line template and a fix hint.

Templates and hints are ``str.format`` strings over the positional arguments the
checker passes to ``report``; axis names in them come from ``shapecheck.vocabulary``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

SEVERITIES: tuple[str, ...] = ("info", "warning", "error")  # in increasing order


@dataclass(frozen=True)
class Finding:
    """One reported problem, 1-based line and column."""

    path: str
    line: int
    col: int
    code: str
    severity: str
    message: str
    hint: str

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path, "line": self.line, "col": self.col, "code": self.code,
            "severity": self.severity, "message": self.message, "hint": self.hint,
        }


class Message:
    """Base of every rule; subclasses set the class attributes only."""

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[str] = "error"
    template: ClassVar[str] = ""
    hint: ClassVar[str] = ""
    args: ClassVar[tuple[str, ...]] = ()  # what each ``{i}`` of the template and hint stands for

    @classmethod
    def described(cls) -> tuple[str, str]:
        """(template, hint) with each ``{i}`` shown as ``<what it stands for>``, for ``--list-rules``."""
        shown = [f"<{a}>" for a in cls.args]
        return cls.template.format(*shown), cls.hint.format(*shown)

    @classmethod
    def finding(cls, path: str, line: int, col: int, *args: object) -> Finding:
        text = [str(a) for a in args]
        return Finding(path, line, col, cls.code, cls.severity, cls.template.format(*text), cls.hint.format(*text))


class FileNotParsed(Message):
    code, name = "SC001", "file-not-parsed"
    template = "cannot analyse: {0}"
    hint = "lint reads Python source; fix the file or exclude it"
    args = ("reason",)


class EmptyFile(Message):
    code, name, severity = "SC002", "empty-file", "info"
    template = "empty file: nothing to analyse"
    hint = "nothing to do; ignore SC002 in [tool.shapecheck] to hide this"


class AnalysisStopped(Message):
    code, name, severity = "SC003", "analysis-stopped", "info"
    template = "analysis stopped: {0}"
    hint = "split an expression that nests too deeply; an internal error is a gap in lint: please report it"
    args = ("reason",)


class SoftmaxAxis(Message):
    code, name = "SC101", "softmax-axis"
    template = "softmax over {0} of attention scores {1}; the key axis is {2}"
    hint = "normalise over the keys: softmax over {2}"
    args = ("dim", "scores axes", "key axis")


class UnscaledScores(Message):
    code, name, severity = "SC102", "unscaled-scores", "warning"
    template = "attention scores Q·Kᵀ reach softmax without scaling by 1/√d_head"
    hint = "divide the scores (or the queries) by math.sqrt(d_head) before the softmax"


class WidthScaledScores(Message):
    code, name = "SC103", "width-scaled-scores"
    template = "attention scores scaled by the model width ({0}) instead of the head size d_head"
    hint = "scale by 1/√d_head (d_model // heads), not 1/√d_model"
    args = ("width",)


class HeadsScaledScores(Message):
    code, name = "SC122", "heads-scaled-scores"
    template = "attention scores scaled by the head count ({0}) instead of the head size d_head"
    hint = "scale by 1/√d_head (d_model // heads), not 1/√heads"
    args = ("head count",)


class UntemperedCosineScores(Message):
    code, name, severity = "SC123", "untempered-cosine-scores", "warning"
    template = ("attention scores are cosine similarities (queries and keys normalised to unit length) and reach "
                "softmax without a temperature: in [-1, 1] the softmax stays close to uniform")
    hint = "multiply the similarities by a learned logit scale (attn * logit_scale.exp()) or divide by a temperature"


class HalfScaledScores(Message):
    code, name, severity = "SC124", "half-scaled-scores", "warning"
    template = ("attention scores reach softmax scaled by d_head ** -0.25 on one side only: the queries and the keys "
                "each need that factor (1/√d_head in all)")
    hint = "scale both q and k by d_head ** -0.25, or the scores once by d_head ** -0.5"


class MergeWithoutTranspose(Message):
    code, name = "SC104", "merge-without-transpose"
    template = "heads merged by {0}({1}) from [{2}]: heads and d_head are not adjacent"
    hint = "move heads next to d_head first: .transpose(1, 2).contiguous().view(batch, seq, heads * d_head)"
    args = ("view or reshape", "target", "source axes")


class SplitWithoutTranspose(Message):
    code, name = "SC105", "split-without-transpose"
    template = "heads split by {0}({1}) from [{2}]: {3} lies in memory before the heads it is placed after"
    hint = "split the last axis in place, then move heads: .view(batch, seq, heads, d_head).transpose(1, 2)"
    args = ("view or reshape", "target", "source axes", "axis")


class ViewNotContiguous(Message):
    code, name = "SC106", "view-not-contiguous"
    template = "view({0}) on a transposed/permuted [{1}] tensor merges axes that are not adjacent in memory"
    hint = "call .contiguous() before .view(...), or use .reshape(...)"
    args = ("target", "source axes")


class MaskedFillDiscarded(Message):
    code, name = "SC107", "masked-fill-discarded"
    template = "result of masked_fill is discarded: {0} stays unmasked"
    hint = "assign it back ({0} = {0}.masked_fill(...)) or use the in-place masked_fill_"
    args = ("tensor",)


class MaskedFillWrongName(Message):
    code, name = "SC108", "masked-fill-wrong-name"
    template = "masked scores stored in '{0}'{1}, but the softmax on line {2} reads {3}"
    hint = "assign the masked scores back to the name the softmax reads: {4} = {4}.masked_fill(...)"
    args = ("name", "when", "line", "what the softmax reads", "scores")


class MaskConvention(Message):
    code, name, severity = "SC109", "mask-convention", "warning"
    template = "'{0}' is {1}, but it is used as the positions to fill"
    hint = "use the mask by its convention: {2}"
    args = ("mask", "convention", "fix")


class MaskConventionByName(MaskConvention):
    """SC109 where the convention is only the parameter's public name (Hugging Face's ``attention_mask``, torch's
    ``key_padding_mask``): inside a layer the name often holds the model's prepared mask of the other polarity."""
    code, name, severity = "SC174", "mask-convention-by-name", "warning"


class DropoutAlwaysOn(Message):
    code, name, severity = "SC110", "dropout-always-on", "warning"
    template = "{0}(...) in {1}() without training=: dropout stays on in eval mode"
    hint = "pass training=self.training, or use an nn.Dropout module"
    args = ("call", "method")


class UndefinedName(Message):
    code, name = "SC111", "undefined-name"
    template = "{0}"
    hint = "define it, or take it as an argument (e.g. a config field)"
    args = ("pyflakes message",)


class ReshapeOrder(Message):
    code, name = "SC112", "reshape-order"
    template = "{0}({1}) on a [{2}] tensor puts {3} before {4}: view/reshape never moves data, so axes get mixed"
    hint = "permute/transpose to the target order first, then .contiguous().view(...)"
    args = ("view or reshape", "target", "source axes", "first axis", "second axis")


class KeyQueryLength(Message):
    code, name = "SC113", "key-query-length"
    template = "keys/values reshaped with the query length ({0}, seq_q) in {1}({2})"
    hint = "keys and values have the key length seq_k ({3}); use it (or -1) in cross-attention"
    args = ("query length", "view or reshape", "target", "key length")


class SdpaDropoutAlwaysOn(Message):
    code, name, severity = "SC114", "sdpa-dropout-always-on", "warning"
    template = "{0}(..., dropout_p={1}) in {2}() with no training check: dropout stays on in eval mode"
    hint = "pass dropout_p={1} if self.training else 0.0"
    args = ("call", "probability", "method")


class DropoutModuleAsProbability(Message):
    code, name = "SC115", "dropout-module-as-probability"
    template = "dropout_p={0} is an nn.Dropout module (made on line {1}), where a probability is expected"
    hint = "pass the module's probability: dropout_p={0}.p if self.training else 0.0"
    args = ("argument", "line")


class ScaledAfterSoftmax(Message):
    code, name = "SC116", "scaled-after-softmax"
    template = "attention probabilities scaled by {0} after the softmax: rows no longer sum to 1 and the scores stay unscaled"
    hint = "scale the scores before the softmax: softmax(q @ k.transpose(-2, -1) * {0}, dim=-1)"
    args = ("head count",)


class MaskAfterSoftmax(Message):
    code, name = "SC117", "mask-after-softmax"
    template = "mask applied to attention probabilities after the softmax ({0}): masked keys already took their share"
    hint = "fill the scores before the softmax: scores.masked_fill(mask, float('-inf')), then softmax(dim=-1)"
    args = ("how",)


class FillDoesNotMask(Message):
    code, name = "SC118", "fill-does-not-mask"
    template = "masked_fill(..., {0}) on attention scores does not mask: exp({0}) keeps the filled keys' weight"
    hint = "fill the scores with float('-inf') or torch.finfo(scores.dtype).min"
    args = ("fill value",)


class LayerInForward(Message):
    code, name = "SC119", "layer-in-forward"
    template = "{0}(...) constructed inside {1}(): new random weights on every call, never trained nor saved"
    hint = "create it once in __init__ (self.<name> = {0}(...)) and call it in {1}()"
    args = ("layer", "method")


class FillOverflowsHalf(Message):
    code, name, severity = "SC120", "fill-overflows-half", "warning"
    template = ("masked_fill(..., {0}) on attention scores in a module run in half precision, with no dtype guard: "
                "float16 cannot hold {0} and masked_fill raises")
    hint = "fill with torch.finfo(scores.dtype).min, or upcast the scores with .float() before the fill"
    args = ("fill value",)


class PaddingMaskOnQueries(Message):
    code, name = "SC121", "padding-mask-on-queries"
    template = ("mask {0} puts its {1} axis on the scores' query axis ({2}): padded keys keep their weight "
                "(query rows are masked instead), or it fails to broadcast when the lengths differ")
    hint = "put the key axis last: mask[:, None, None, :] (or unsqueeze(1).unsqueeze(2)) on [batch, heads, {2}, {1}] scores"
    args = ("mask", "key axis", "query axis")


class MaskedMasksIntersected(Message):
    code, name = "SC125", "masked-masks-intersected"
    template = "'{0}' and '{1}' are both True where masked, but '&' keeps only the positions both mask"
    hint = "combine masks that are True where masked with '|' (or masks that are True where kept with '&')"
    args = ("first mask", "second mask")


class FusedLayout(Message):
    code, name = "SC126", "fused-layout"
    template = "{0} reads '{1}' as {2}, but {3} is given the same '{1}' as {4}: one of them reads heads as positions"
    hint = "transpose for the kernel that needs it: {0}({1}.transpose(1, 2), ...).transpose(1, 2)"
    args = ("kernel", "query", "its layout", "other kernel", "its layout")


class ResultDiscarded(Message):
    code, name = "SC127", "result-discarded"
    template = "result of {0} is discarded: {1} is unchanged"
    hint = "assign the result ({1} = ...); these operations return a new tensor"
    args = ("call", "tensor")


class CausalWithCache(Message):
    code, name = "SC128", "causal-with-cache"
    template = ("{0} aligns the causal mask top-left, but the keys ({1}) include a cache: "
                "with more keys than queries, each query sees too few keys")
    hint = ("align it bottom-right: slice [k_len - q_len:k_len, :k_len], or pass is_causal only when there is "
            "no cache (is_causal=q_len > 1 and past is None)")
    args = ("causal mask", "keys")


class RotaryTwice(Message):
    code, name = "SC129", "rotary-twice"
    template = "'{0}' is rotated again: the rotary embedding was applied to it on line {1} already"
    hint = "apply the rotary embedding once to the queries and once to the keys"
    args = ("tensor", "line")


class ComputedUnused(Message):
    code, name = "SC130", "computed-unused"
    template = "'{0}' = {1}(...) is overwritten on line {2}{3} before anything reads it: the result is lost"
    hint = "use the computed value (the stored name) where line {2} uses something else"
    args = ("name", "call", "line", "on which path")


class MaskSumOverflowsHalf(Message):
    code, name, severity = "SC131", "mask-sum-overflows-half", "warning"
    template = ("{0} adds two additive masks that each hold finfo({1}).min, with no clamp: in float16 the sum "
                "overflows to -inf, and a row both mask gives NaN after the softmax")
    hint = ("clamp the sum (torch.clamp({0}, min=torch.finfo({1}).min)), or combine the boolean masks and fill once")
    args = ("sum", "dtype")


class RotaryOnHeads(Message):
    code, name = "SC132", "rotary-on-heads"
    template = ("{0} gives the rotary embedding the heads axis as its positions ({1}): the rotation follows the "
                "head index, not the token's position")
    hint = ("give it the sequence axis: after the transpose to [batch, heads, seq, d_head] that is shape[-2] "
            "(or seq_dim=-2)")
    args = ("call", "argument")


class BiasInMaskDtype(Message):
    code, name, severity = "SC133", "bias-in-mask-dtype", "warning"
    template = ("{0} turns '{1}' into an additive bias in {1}.dtype, the mask's own (bool or int) dtype, not the "
                "activations'")
    hint = "pass the dtype of the tensor the bias is added to (the queries or hidden states): {2}(..., x.dtype)"
    args = ("call", "mask", "callee")


class NormaliserMultiplied(Message):
    code, name = "SC134", "normaliser-multiplied"
    template = ("'{0}' is the normaliser of linear attention (the queries against the keys summed over the positions), "
                "but it multiplies the output instead of dividing it")
    hint = "divide by the normaliser: out / D, or multiply by its inverse (D_inv = 1. / einsum(...))"
    args = ("normaliser",)


class MaskParameterUnread(Message):
    code, name = "SC135", "mask-parameter-unread"
    template = ("'{1}' is passed as {0}= as well as for another mask of the same call, while this function's own "
                "parameter '{0}' is never read: the caller's mask is dropped")
    hint = "pass the parameter: {0}={0} (or build the value from it)"
    args = ("parameter", "passed")


class RotaryOnValues(Message):
    code, name = "SC136", "rotary-on-values"
    template = ("{0} rotates the values ({1}): the rotary embedding belongs on the queries and keys only, whose "
                "dot product it makes relative; rotated values mix position into what is averaged")
    hint = "apply the rotary embedding to q and k, and pass v to the attention as projected"
    args = ("call", "values")


class GivenOnlyWhenAbsent(Message):
    code, name = "SC137", "given-only-when-absent"
    template = ("'{0}' is read only where it is None (line {1}), after the default replaced it: what the caller "
                "gives for it is never used")
    hint = "use '{0}' after the if, so the given one is passed on too (dedent the line that uses it)"
    args = ("name", "line")


class SameBranches(Message):
    code, name, severity = "SC138", "same-branches", "warning"
    template = "both branches of the choice on '{0}' do the same ({1}): the condition changes nothing"
    hint = "make the branch for {0} do what it is for (a copy left unchanged?), or drop the if"
    args = ("condition", "statement")


class UnfoldSplitOrder(Message):
    code, name = "SC139", "unfold-split-order"
    template = ("{0} splits the unfolded axis of '{1}' as ({2}) with the kernel positions outermost, but unfold lays "
                "it out as (channels, kernel positions): kernel positions and channels get mixed")
    hint = "split it channels first: '(d j)' in einops, or view(batch, channels, kernel_positions, -1)"
    args = ("call", "tensor", "split")


class SquareFromOneLength(Message):
    code, name = "SC140", "square-from-one-length"
    template = ("'{0}' is built {1} x {1} from {2}.shape[{3}] alone and applied to {2}, taking its query axis "
                "(shape[-2]) and its key axis (shape[-1]) to be as long: with fewer queries than keys (a cache) "
                "the rows are wrong")
    hint = ("build it from both lengths (q_len, k_len = {2}.shape[-2:]) and keep its last q_len rows "
            "({0}[..., k_len - q_len:, :])")
    args = ("bias", "length", "scores", "axis")
class ArgumentsOutOfOrder(Message):
    code, name = "SC150", "arguments-out-of-order"
    template = ("{0}({1}) passes its arguments in another order than its parameters ({2}): each named argument "
                "lands on another parameter")
    hint = "pass each name to the parameter of that name: {0}({3}) (or pass them by keyword)"
    args = ("callee", "arguments", "parameters", "arguments in order")


class CacheDefaultEvaluated(Message):
    code, name, severity = "SC151", "cache-default-evaluated", "warning"  # the result is right, the work is redone
    template = ("{0} evaluates its default {1} before the lookup, on every call: the cached value never saves "
                "that computation")
    hint = "compute it only when missing: {2} if the key is in the cache, else {1}"
    args = ("lookup", "default", "cached")


class CacheDtypeUnmatched(Message):
    code, name = "SC152", "cache-dtype-unmatched"
    template = ("{0} writes '{1}' into the cache '{2}' with no dtype matched in this function: under autocast "
                "the keys/values are float16/bfloat16 while the cache keeps its own dtype, and {3} needs both alike")
    hint = "cast one to the other first: {2} = {2}.to({1}.dtype) (or {1}.to({2}.dtype))"
    args = ("call", "source", "cache", "method")


class ReshapedTwice(Message):
    code, name = "SC153", "reshaped-twice"
    template = "'{0}' is reshaped again on line {2} ({1}) after line {3} reshaped it: it reads {4}"
    hint = "reshape '{0}' once (drop the repeated line, or give the second one another name)"
    args = ("name", "reshape", "line", "first line", "what it reads")


class KeysExpandedToQueries(Message):
    code, name = "SC154", "keys-expanded-to-queries"
    template = ("'{0}' ({1}) is expanded to the queries' shape ({2}) and then attended as {1}: the key length becomes "
                "the query length, wrong whenever keys are longer (a cache, memory key/values, cross-attention)")
    hint = ("repeat only the heads axis: repeat({0}, 'b ... -> b h ...', h={3}.shape[1]) or "
            "{0}.expand(-1, heads, -1, -1)")
    args = ("name", "role", "expansion", "query")


class RotaryWithoutOffset(Message):
    code, name = "SC155", "rotary-without-offset"
    template = ("{0} starts the rotary positions at 0 for the new tokens, in a function with a cache or an offset "
                "({1}): with a cache the new tokens are rotated as the first positions")
    hint = "start at the offset: {2} (or gather the table with the tokens' position ids)"
    args = ("expression", "offset", "fix")


class SettingNotForwarded(Message):
    code, name = "SC156", "setting-not-forwarded"
    template = ("{0}(...) is built without {1}=, which {2} takes and never uses: the {0} keeps its default whatever "
                "the caller asks for")
    hint = "pass it on: {0}(..., {1}={1})"
    args = ("class", "setting", "owner")


class ScaledTwice(Message):
    code, name = "SC164", "scaled-twice"
    template = "attention scores scaled by 1/√d_head twice: {0} (line {1}) and again {2}"
    hint = "scale once: {3}"
    args = ("first scaling", "line", "second scaling", "fix")


class HostTensorMeetsInputs(Message):
    code, name = "SC165", "host-tensor-meets-inputs"
    template = ("{0} (line {1}) is made without device= (on the CPU, or the default GPU after .cuda()) and meets "
                "the inputs here: fails when they are on another device")
    hint = "make it where the inputs are: device=x.device (or torch.zeros_like / x.new_zeros)"
    args = ("allocation", "line")


class RepeatedAssert(Message):
    code, name = "SC166", "repeated-assert"
    template = "assert {0} repeats line {1} word for word with nothing rebound between: a copy meant for another name?"
    hint = "check the name the copy was for (the key/value twin of a query-side check, say)"
    args = ("test", "line")


class ResidualDropped(Message):
    code, name = "SC167", "residual-dropped"
    template = ("'{0}' replaces '{1}' instead of adding to it, while the other blocks of the loop add their output "
                "to '{1}' (a residual)")
    hint = "add the residual: {1} = {0}({1}, ...) + {1}"
    args = ("block", "stream")


class ReplacementUnused(Message):
    code, name = "SC168", "replacement-unused"
    template = "'{0}' is made to stand in for '{1}' (a default or a recast of it) but never read: the code below reads '{1}'"
    hint = "read '{0}' where '{1}' is read below, or drop it"
    args = ("name", "parameter")


class StaleCompanion(Message):
    code, name = "SC169", "stale-companion"
    template = ("self.{0} is rebuilt here and the call's other results are dropped: {1} (taken with it in "
                "__init__, line {2}) no longer match it")
    hint = "take them all again, as __init__ does: self.a, self.b = f(...)"
    args = ("attribute", "companions", "line")


class TupleAsTensor(Message):
    code, name = "SC170", "tuple-as-tensor"
    template = "'{0}' takes the whole result of {1}(), which always returns {2} values, and is then used as a tensor"
    hint = "unpack it: _, {0} = {1}(...)"
    args = ("name", "function", "count")


class PositionsInHalf(Message):
    code, name, severity = "SC171", "positions-in-half", "warning"
    template = ("positions made with dtype={0} and compared to build a mask: in float16 integers are exact only up "
                "to 2048 (bfloat16: 256), so distinct positions compare equal")
    hint = "make positions as integers: torch.arange(n, device=..., dtype=torch.long)"
    args = ("dtype",)


class KernelLayout(Message):
    code, name = "SC172", "kernel-layout"
    template = "{0} reads its query as {1}, but '{2}' is ({3}): the kernel attends across the wrong axis"
    hint = "lay it out for the kernel: {0}({2}.transpose(1, 2), ...), and transpose the output back"
    args = ("kernel", "its layout", "query", "its axes")


class MaskAppliedToNothing(Message):
    code, name = "SC173", "mask-applied-to-nothing"
    template = "'{0}' = {1} is never read afterwards: a mask, or a value made with one, computed for nothing"
    hint = "pass '{0}' on where the attention reads its mask (or stop computing it)"
    args = ("name", "its value")


class BoolMaskFilled(Message):
    code, name = "SC175", "bool-mask-filled"
    template = ("{0} writes a number into '{1}', a boolean tensor: it stays boolean and the number is stored as True, "
                "so the mask never becomes the additive bias meant")
    hint = ("build the bias in the scores' dtype: torch.zeros_like({1}, dtype=scores.dtype).masked_fill({1}, "
            "float('-inf')), or keep the boolean mask and fill the scores with it")
    args = ("write", "mask")


class BinaryMaskAdded(Message):
    code, name = "SC176", "binary-mask-added"
    template = "'{0}' holds {1} and is {2}: that shifts the scores by 1 where it is set, it masks nothing"
    hint = ("turn it into a bias first: torch.zeros_like(scores).masked_fill(~keep, float('-inf')), or fill the "
            "scores with it, or pass a boolean mask (True = attend) to the kernel")
    args = ("mask", "its entries", "where")


class BoolMaskSubtracted(Message):
    code, name = "SC177", "bool-mask-subtracted"
    template = "1 - {0} on a boolean mask raises: torch does not subtract booleans"
    hint = "invert it with ~{0} (or {0}.logical_not()), or cast it to a number first"
    args = ("mask",)


class TupleItemAssigned(Message):
    code, name = "SC178", "tuple-item-assigned"
    template = "'{0}' only ever holds a tuple (stored on line {1}), and a tuple takes no item assignment: this raises"
    hint = "store a new tuple ({0} = (new_keys, new_values)) or keep a list"
    args = ("holder", "line")


class TensorMethodMisspelled(Message):
    code, name = "SC179", "tensor-method-misspelled"
    template = "torch.Tensor has no method '{0}' ({1} is a tensor made here): the call raises AttributeError"
    hint = "call the method meant: {2}"
    args = ("method", "receiver", "closest methods")


class UnboundOnPath(Message):
    """A local name read on a path that never binds it: UnboundLocalError there."""
    code, name = "SC183", "unbound-on-a-path"
    template = "'{0}' is read here unbound on some path: {1}"
    hint = "bind '{0}' on every path to this line, or stop the path that cannot (raise)"
    args = ("name", "why")


class CallRefused(Message):
    """A call its callee (a kernel, or a function, method or class of the file) cannot bind: TypeError."""
    code, name = "SC186", "call-refused"
    template = "{0}() {1}: it takes {2}"
    hint = "give {0} what its signature names; as written the call raises TypeError"
    args = ("callee", "what does not bind", "signature")


class SliceToMinusZero(Message):
    """A slice that stops at ``-n`` for an ``n`` that may be 0: ``x[:-0]`` is empty."""
    code, name = "SC187", "slice-to-minus-zero"
    template = "the slice stops at -{0}, and {0} = {1} may be 0: then it keeps nothing ([:-0] is [:0])"
    hint = "slice up to the length to keep ([..., :n - {0}]), or cut only when {0} > 0"
    args = ("count", "its definition")


class CombinedWithItselfReduced(Message):
    """A tensor combined elementwise with itself less an axis other than the first: broadcasting misaligns them."""
    code, name = "SC188", "combined-with-itself-reduced"
    template = ("{0} has lost axis {2} of {1}, and broadcasting lines the shapes up from the right: combined with {1}, "
                "its axes meet the wrong ones (wrong, or an error, for any batch but 1)")
    hint = "keep the axis: {3}"
    args = ("reduced", "tensor", "axis", "how to keep it")


class ExpWithoutMax(Message):
    """A softmax written out, exp and its sum, with no maximum taken off first: overflow, then NaN."""
    code, name = "SC189", "exp-without-max"
    template = ("exp({0}) is divided by its sum in '{1}' with no maximum taken off {0} first: exp overflows to inf "
                "past 88 in float32 (11 in float16), and inf / inf is NaN")
    hint = "subtract the row maximum first ({0} = {0} - {0}.amax(dim=-1, keepdim=True)), or call softmax"
    args = ("scores", "result")


class ModeWrittenInForward(Message):
    """``forward`` writes ``self.training``: the mode ``train()``/``eval()`` set is overwritten on every call."""
    code, name = "SC190", "mode-written-in-forward"
    template = ("forward sets self.training = {0} on every call: train() and eval() no longer reach this module, and "
                "each test of self.training below takes that branch in both modes")
    hint = "leave the mode to model.train() / model.eval(); test self.training, never assign it in forward"
    args = ("value",)


class ModuleRepeated(Message):
    """One module object put in a container several times: its layers are one layer, with one set of weights."""
    code, name = "SC184", "module-repeated"
    template = "{0} holds one module object ({1}) at every position: the layers share their weights"
    hint = "build one module per position: [{2} for _ in range(n)]"
    args = ("container", "module", "a fresh module")


class SoftmaxOverOne(Message):
    """A softmax over an axis of size 1: every weight is 1, whatever the scores (``nn.Linear(d, 1)``'s output
    normalised over its last axis instead of the positions)."""
    code, name = "SC185", "softmax-over-one"
    template = "softmax over {0}, an axis of size 1 of [{1}]: every weight is 1, whatever the scores"
    hint = "normalise over the axis that holds what is weighed (the positions or keys), not the size-1 axis"
    args = ("dim", "axes")


class KernelMaskConvention(Message):
    """SC109 for a reader other than a fill: a boolean mask of known polarity given to a kernel or a ``where``
    that reads its True entries the other way."""
    code, name, severity = "SC180", "kernel-mask-convention", "warning"
    template = "'{0}' is {1}, but {2} takes its True entries as {3}"
    hint = "give it the mask of the other polarity (~{0}), or build the mask the reader expects"
    args = ("mask", "convention", "reader", "what the reader takes")


class MaskReadBothWays(Message):
    code, name = "SC181", "mask-read-both-ways"
    template = "'{0}' is read with True = {4} by {5}, but with True = {1} by {2} on line {3}: one of the two has it " \
               "backwards"
    hint = "decide what the mask's True entries mean, and negate it (~{0}) where it is read the other way"
    args = ("mask", "first meaning", "first reader", "first line", "meaning here", "reader here")


class ProjectedPerHead(Message):
    code, name = "SC182", "projection-per-head"
    template = ("self.{0} = {1} projects one head's slice after the split into heads: every head shares its weights "
                "and sees only its own d_head features of the input, not the whole width")
    hint = "project the full width first (nn.Linear(embed_dim, embed_dim)), then split the result into heads"
    args = ("layer", "construction")


RULES: tuple[type[Message], ...] = (
    FileNotParsed, EmptyFile, AnalysisStopped, SoftmaxAxis, UnscaledScores, WidthScaledScores,
    MergeWithoutTranspose, SplitWithoutTranspose, ViewNotContiguous, MaskedFillDiscarded,
    MaskedFillWrongName, MaskConvention, DropoutAlwaysOn, UndefinedName, ReshapeOrder, KeyQueryLength,
    SdpaDropoutAlwaysOn, DropoutModuleAsProbability, ScaledAfterSoftmax, MaskAfterSoftmax, FillDoesNotMask,
    LayerInForward, FillOverflowsHalf, PaddingMaskOnQueries, HeadsScaledScores, UntemperedCosineScores,
    HalfScaledScores, MaskedMasksIntersected, FusedLayout, ResultDiscarded, CausalWithCache, RotaryTwice,
    ComputedUnused, MaskSumOverflowsHalf, RotaryOnHeads, BiasInMaskDtype, NormaliserMultiplied,
    MaskParameterUnread, RotaryOnValues, GivenOnlyWhenAbsent, SameBranches, UnfoldSplitOrder,
    SquareFromOneLength, ArgumentsOutOfOrder, CacheDefaultEvaluated, CacheDtypeUnmatched, ReshapedTwice,
    KeysExpandedToQueries, RotaryWithoutOffset, SettingNotForwarded, ScaledTwice, HostTensorMeetsInputs,
    RepeatedAssert, ResidualDropped, ReplacementUnused, StaleCompanion, TupleAsTensor, PositionsInHalf,
    KernelLayout, MaskAppliedToNothing, MaskConventionByName, BoolMaskFilled, BinaryMaskAdded, BoolMaskSubtracted,
    TupleItemAssigned, TensorMethodMisspelled, KernelMaskConvention, MaskReadBothWays, ProjectedPerHead,
    UnboundOnPath, ModuleRepeated, SoftmaxOverOne, CallRefused, SliceToMinusZero, CombinedWithItselfReduced,
    ExpWithoutMax, ModeWrittenInForward,
)
CODES: tuple[str, ...] = tuple(rule.code for rule in RULES)
# Rules reported only where ``select``/``extend-select`` names their exact code: on public code nobody had tuned
# lint to (the first run of each half of benchmarks/lint_corpus/precision_manifest_{2..6}.tsv) fewer than 90% of the
# code sites they named were real defects, and no general rule fixes the rest. SC102: unscaled scores by design
# (T5's folded scale, DANet). SC110, SC118, SC128, SC138: dropout guarded in ways the rule did not read, fills of
# probabilities or of linear attention, causal masks applied before a cache joins or by a kernel aligned
# bottom-right, branches meant to be equal. SC130, SC166, SC173: a line written twice, an assert copied for another
# name, a mask left over: slips that change no result. SC136: values rotated by design (routing-transformer). SC165:
# codebases that run on the default GPU throughout, or build on the host on purpose. SC174: a mask's convention read
# from its name alone (Falcon's layers get the model's prepared mask of the other polarity). SC151: work redone, the
# result right (a copy of whisper's layer in corpus 7): a performance warning, not a defect in what is computed.
# After corpus 8: SC127, a discarded ``squeeze(0)`` whose layout the code after it never needed; SC150, a call whose
# order is right and whose callee's parameter names are not (RT-DETR's ``(x, w, h)``, w the rows); SC152, caches
# allocated in the weights' dtype, which the keys share outside autocast (moshi, gemma_pytorch). After corpus 12, over
# every corpus: SC104, right at 9 of 13 findings (a decode path correct only for one sequence of one query, copied
# four times in KVCache-Factory), and SC107, right at 3 of 4 (long_llama's discarded fill of padding positions the
# attention mask hides). After corpus 24: SC101, right at 5 of 16 findings on the first runs of corpora 16 to 24 and
# at none of the 3 on their held-out halves: which axis holds the keys is read from how a product is written and what
# its operands are called (keys-first ``kᵀ·q`` products, a softmax class of the file's own, attention normalised both
# ways on purpose), and each fix left the next corpus's idiom unread.
OPT_IN: frozenset[str] = frozenset({"SC101", "SC102", "SC104", "SC107", "SC110", "SC118", "SC127", "SC128", "SC130",
                                    "SC136", "SC138", "SC150", "SC151", "SC152", "SC165", "SC166", "SC173", "SC174"})
# Rules that say in general what a more specific rule may say of the same line: where another finding is on that
# line, theirs is left out (SC108 says which name the softmax reads instead; SC173 only that the value is unread).
GENERIC: frozenset[str] = frozenset({"SC173"})
# Rules about memory layout: they hold whatever the code means, so they are reported inside followed helpers too.
LAYOUT_RULES: frozenset[type[Message]] = frozenset({
    MergeWithoutTranspose, SplitWithoutTranspose, ViewNotContiguous, ReshapeOrder, KernelLayout,
})
