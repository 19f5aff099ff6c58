/** Bindings of the test Worker (wrangler.toml in this folder). */
declare namespace Cloudflare {
  interface Env {
    COUNTER: DurableObjectNamespace<import("./objects.js").Counter>;
    KV_COUNTER: DurableObjectNamespace<import("./objects.js").KvCounter>;
    KV_DEFAULTS: DurableObjectNamespace<import("./objects.js").KvDefaults>;
    MY_COUNTER: DurableObjectNamespace<import("./objects.js").MyCounter>;
    WRAPPED: DurableObjectNamespace<import("./objects.js").PlainBase>;
    MANUAL: DurableObjectNamespace<import("./objects.js").Manual>;
    LIVE_COUNTER: DurableObjectNamespace<import("./objects.js").LiveCounter>;
    PATIENT_COUNTER: DurableObjectNamespace<import("./objects.js").PatientCounter>;
    COMPOSER: DurableObjectNamespace<import("./compose-objects.js").Composer>;
    ROOM: DurableObjectNamespace<import("./push-objects.js").Room>;
    VAULT: DurableObjectNamespace<import("./schema-objects.js").Vault>;
    STRICT_VAULT: DurableObjectNamespace<import("./schema-objects.js").StrictVault>;
    UNCHECKED: DurableObjectNamespace<import("./schema-objects.js").Unchecked>;
    DIRECTORY: DurableObjectNamespace<import("./guide/directory.js").Directory>;
    TABLE: DurableObjectNamespace<import("./guide/table.js").Table>;
    LEDGER: DurableObjectNamespace<import("./guide/ledger.js").Ledger>;
    HAND_COMPOSED: DurableObjectNamespace<import("./compose-own-objects.js").HandComposed>;
    HAND_UNDECLARED: DurableObjectNamespace<import("./compose-own-objects.js").HandUndeclared>;
    SUBCLASS_OF_WRAPPED: DurableObjectNamespace<import("./compose-own-objects.js").SubclassOfWrapped>;
    SUBCLASS_WITH_STATIC: DurableObjectNamespace<import("./compose-own-objects.js").SubclassWithStatic>;
    ERROR_HANDLING_WRAPPED: DurableObjectNamespace<InstanceType<typeof import("./compose-own-objects.js").ErrorHandlingWrapped>>;
    NO_ERROR_HANDLER_WRAPPED: DurableObjectNamespace<InstanceType<typeof import("./compose-own-objects.js").NoErrorHandlerWrapped>>;
    OWN_SOCKETS_WRAPPED: DurableObjectNamespace<InstanceType<typeof import("./compose-own-objects.js").OwnSocketsWrapped>>;
    LIVE_WRAPPED: DurableObjectNamespace<InstanceType<typeof import("./compose-own-objects.js").LiveWrapped>>;
    SECRET: string;
  }
}

interface Env extends Cloudflare.Env {}
