package gostop.client

import com.connectrpc.AnyError
import com.connectrpc.CODEC_NAME_PROTO
import com.connectrpc.Codec
import com.connectrpc.ConnectErrorDetail
import com.connectrpc.ErrorDetailParser
import com.connectrpc.SerializationStrategy
import com.google.protobuf.Internal
import com.google.protobuf.MessageLite
import okio.Buffer
import okio.BufferedSource
import okio.ByteString.Companion.toByteString
import java.util.concurrent.ConcurrentHashMap
import kotlin.reflect.KClass

/**
 * connect-kotlin's serialization of protobuf-java messages (binary), as its google-java extension
 * does it but with plain Java class checks: that extension checks every message class with Kotlin's
 * full reflection at every call, which loads about a thousand classes of kotlin-reflect and made
 * the first call of a fresh process several hundred milliseconds slower. The codecs are cached.
 */
internal object ProtobufStrategy : SerializationStrategy {
    private val codecs = ConcurrentHashMap<Class<*>, Codec<*>>()

    override fun serializationName(): String = CODEC_NAME_PROTO

    @Suppress("UNCHECKED_CAST")
    override fun <E : Any> codec(clazz: KClass<E>): Codec<E> =
        codecs.computeIfAbsent(clazz.java) { MessageCodec(messageClass(it)) } as Codec<E>

    override fun errorDetailParser(): ErrorDetailParser = StatusDetails

    @Suppress("UNCHECKED_CAST")
    private fun messageClass(type: Class<*>): Class<out MessageLite> {
        require(MessageLite::class.java.isAssignableFrom(type)) { "${type.name} is not a protobuf message" }
        return type as Class<out MessageLite>
    }

    private class MessageCodec<E : MessageLite>(private val type: Class<E>) : Codec<E> {
        private val parser by lazy { Internal.getDefaultInstance(type).parserForType }

        override fun encodingName(): String = CODEC_NAME_PROTO

        override fun deserialize(source: BufferedSource): E = type.cast(parser.parseFrom(source.inputStream()))

        override fun serialize(message: E): Buffer = Buffer().write(message.toByteArray())

        override fun deterministicSerialize(message: E): Buffer {
            val bytes = ByteArray(message.serializedSize)
            val output = com.google.protobuf.CodedOutputStream.newInstance(bytes)
            output.useDeterministicSerialization()
            message.writeTo(output)
            output.checkNoSpaceLeft()
            return Buffer().write(bytes)
        }
    }

    /** The details of a google.rpc.Status (grpc-status-details-bin, or a Connect error's details). */
    private object StatusDetails : ErrorDetailParser {
        override fun parseDetails(bytes: ByteArray): List<ConnectErrorDetail> =
            RpcStatus.details(bytes).map { ConnectErrorDetail(it.typeUrl, it.value.toByteArray().toByteString()) }

        override fun <E : Any> unpack(any: AnyError, clazz: KClass<E>): E? {
            val type = messageClass(clazz.java)
            val instance = Internal.getDefaultInstance(type)
            if (instance !is com.google.protobuf.Message ||
                any.typeUrl.substringAfterLast('/') != instance.descriptorForType.fullName
            ) {
                return null
            }
            return clazz.java.cast(instance.parserForType.parseFrom(any.value.toByteArray()))
        }
    }
}
