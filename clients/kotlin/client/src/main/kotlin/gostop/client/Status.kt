package gostop.client

import com.google.protobuf.ByteString
import com.google.protobuf.CodedInputStream
import com.google.protobuf.WireFormat

/**
 * The two messages of the error model the client reads, decoded from their wire format with
 * protobuf-java's own reader (so that the client needs no package of Google's common protos):
 * `google.rpc.Status` (code 1, message 2, details 3: repeated `google.protobuf.Any` with type_url 1
 * and value 2) and `google.rpc.ErrorInfo` (reason 1, domain 2, metadata 3: map<string, string>).
 */
internal object RpcStatus {
    const val ERROR_INFO = "google.rpc.ErrorInfo"

    class Detail(val typeUrl: String, val value: ByteString)

    class ErrorInfo(val reason: String, val domain: String, val metadata: Map<String, String>)

    /** The details of a serialized `google.rpc.Status`. */
    fun details(bytes: ByteArray): List<Detail> {
        val input = CodedInputStream.newInstance(bytes)
        val out = ArrayList<Detail>()
        fields(input) { number, type ->
            if (number == 3 && type == WireFormat.WIRETYPE_LENGTH_DELIMITED) {
                var typeUrl = ""
                var value = ByteString.EMPTY
                embedded(input) { n, t ->
                    when {
                        n == 1 && t == WireFormat.WIRETYPE_LENGTH_DELIMITED -> { typeUrl = input.readStringRequireUtf8(); true }
                        n == 2 && t == WireFormat.WIRETYPE_LENGTH_DELIMITED -> { value = input.readBytes(); true }
                        else -> false
                    }
                }
                out.add(Detail(typeUrl, value))
                true
            } else {
                false
            }
        }
        return out
    }

    /** A serialized `google.rpc.ErrorInfo`. */
    fun errorInfo(bytes: ByteArray): ErrorInfo {
        val input = CodedInputStream.newInstance(bytes)
        var reason = ""
        var domain = ""
        val metadata = LinkedHashMap<String, String>()
        fields(input) { number, type ->
            if (type != WireFormat.WIRETYPE_LENGTH_DELIMITED) return@fields false
            when (number) {
                1 -> reason = input.readStringRequireUtf8()
                2 -> domain = input.readStringRequireUtf8()
                3 -> {
                    var key = ""
                    var value = ""
                    embedded(input) { n, t ->
                        when {
                            n == 1 && t == WireFormat.WIRETYPE_LENGTH_DELIMITED -> { key = input.readStringRequireUtf8(); true }
                            n == 2 && t == WireFormat.WIRETYPE_LENGTH_DELIMITED -> { value = input.readStringRequireUtf8(); true }
                            else -> false
                        }
                    }
                    metadata[key] = value
                }
                else -> return@fields false
            }
            true
        }
        return ErrorInfo(reason, domain, metadata)
    }

    /** Reads every field of [input]: [field] reads the ones it knows (true), the others are skipped. */
    private inline fun fields(input: CodedInputStream, field: (number: Int, type: Int) -> Boolean) {
        while (true) {
            val tag = input.readTag()
            if (tag == 0) return
            if (!field(WireFormat.getTagFieldNumber(tag), WireFormat.getTagWireType(tag))) input.skipField(tag)
        }
    }

    /** Reads the fields of the length-delimited message at [input]'s position. */
    private inline fun embedded(input: CodedInputStream, field: (number: Int, type: Int) -> Boolean) {
        val limit = input.pushLimit(input.readRawVarint32())
        fields(input, field)
        input.checkLastTagWas(0)
        input.popLimit(limit)
    }
}
