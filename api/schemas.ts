// Schemas for the objects the reconcile reads from the API server.
//
// Every object schema is loose: unknown fields pass through untouched, because
// the update body of a Deployment is the live object with our fields overlaid,
// and anything we dropped here would be erased on the server. Only the fields
// the planner reads are typed.
import { z } from 'zod';

const StringMap = z.record(z.string(), z.string());

export const OwnerReferenceSchema = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});

export const ObjectMetaSchema = z.looseObject({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.number().int().optional(),
  resourceVersion: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: StringMap.optional(),
  annotations: StringMap.optional(),
  ownerReferences: z.array(OwnerReferenceSchema).optional(),
});

// metav1.Condition. The message defaults to empty because the Go type always
// serialises it, but hand-written objects (and other controllers) may omit it.
export const ConditionSchema = z.looseObject({
  type: z.string().min(1),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().optional(),
  lastTransitionTime: z.string(),
  reason: z.string(),
  message: z.string().default(''),
});

export const GatewayAddressSchema = z.looseObject({
  type: z.string().optional(),
  value: z.string(),
});

export const ParametersRefSchema = z.looseObject({
  group: z.string(),
  kind: z.string(),
  name: z.string(),
});

export const LabelSelectorSchema = z.looseObject({
  matchLabels: StringMap.optional(),
  matchExpressions: z
    .array(
      z.looseObject({
        key: z.string(),
        operator: z.string(),
        values: z.array(z.string()).optional(),
      }),
    )
    .optional(),
});

// The part of a listener that decides which routes may attach
// (Gateway API listeners[].allowedRoutes); the CRD defaults from to Same.
export const ListenerSchema = z.looseObject({
  name: z.string(),
  protocol: z.string().optional(),
  port: z.number().int().optional(),
  allowedRoutes: z
    .looseObject({
      namespaces: z
        .looseObject({
          from: z.string().default('Same'),
          selector: LabelSelectorSchema.optional(),
        })
        .optional(),
      kinds: z.array(z.looseObject({ group: z.string().optional(), kind: z.string() })).optional(),
    })
    .optional(),
});

// Every object we read: apiVersion and kind (absent in some list items), the
// metadata we use, and the kind's own fields.
function kubeObject<S extends z.ZodRawShape>(shape: S) {
  return z.looseObject({ apiVersion: z.string().optional(), kind: z.string().optional(), metadata: ObjectMetaSchema, ...shape });
}

export const GatewaySchema = kubeObject({
  spec: z.looseObject({
    gatewayClassName: z.string(),
    listeners: z.array(ListenerSchema).default([]),
    infrastructure: z
      .looseObject({
        labels: StringMap.optional(),
        annotations: StringMap.optional(),
        parametersRef: ParametersRefSchema.optional(),
      })
      .optional(),
  }),
  status: z
    .looseObject({
      conditions: z.array(ConditionSchema).optional(),
      addresses: z.array(GatewayAddressSchema).optional(),
    })
    .optional(),
});

// spec.parametersRef names a namespaced GatewayConfiguration, the default of
// the class's Gateways that have none of their own (GEP-1867).
export const ClassParametersRefSchema = z.looseObject({
  group: z.string(),
  kind: z.string(),
  name: z.string(),
  namespace: z.string().optional(),
});

export const GatewayClassSchema = kubeObject({
  spec: z.looseObject({
    controllerName: z.string(),
    parametersRef: ClassParametersRefSchema.optional(),
  }),
  status: z
    .looseObject({
      conditions: z.array(ConditionSchema).optional(),
      supportedFeatures: z.array(z.looseObject({ name: z.string() })).optional(),
    })
    .optional(),
});

// Kubernetes quantities arrive as strings from the API server, but YAML
// written by people (and CRDs, which do not canonicalise) may carry numbers.
export const QuantitySchema = z.union([z.string(), z.number()]);
export const ResourceListSchema = z.record(z.string(), QuantitySchema);

export const ResourceRequirementsSchema = z.looseObject({
  requests: ResourceListSchema.optional(),
  limits: ResourceListSchema.optional(),
  claims: z.array(z.looseObject({ name: z.string() })).optional(),
});

export const ResizePolicySchema = z.looseObject({
  resourceName: z.string(),
  restartPolicy: z.string(),
});

// The CRD defaults (type/attachmentType NAD, replicas 2, enforceReplicas true,
// enforceResources false) are repeated here: objects built in tests or read
// from an older CRD version may lack them. Missing NAD fields parse as empty
// strings so that validation can name the gap instead of failing the parse.
export const NetworkAttachmentSchema = z.looseObject({
  description: z.string().optional(),
  type: z.string().default('NAD'),
  nad: z
    .looseObject({
      name: z.string().default(''),
      namespace: z.string().default(''),
      interface: z.string().default(''),
    })
    .optional(),
});

export const InternalSubnetSchema = z.looseObject({
  attachmentType: z.string().default('NAD'),
  cidr: z.string().default(''),
});

export const ContainerArgsSchema = z.looseObject({
  name: z.string(),
  resources: ResourceRequirementsSchema.optional(),
  enforceResources: z.boolean().default(false),
  resizePolicy: z.array(ResizePolicySchema).optional(),
});

export const GatewayConfigurationSchema = kubeObject({
  spec: z
    .looseObject({
      networkAttachments: z.array(NetworkAttachmentSchema).default([]),
      internalSubnets: z.array(InternalSubnetSchema).default([]),
      horizontalScaling: z
        .looseObject({
          replicas: z.number().int().default(2),
          enforceReplicas: z.boolean().default(true),
        })
        .prefault({}),
      verticalScaling: z
        .looseObject({
          containers: z.array(ContainerArgsSchema).optional(),
        })
        .optional(),
    })
    .prefault({}),
});

export const ParentRefSchema = z.looseObject({
  group: z.string().optional(),
  kind: z.string().optional(),
  namespace: z.string().optional(),
  name: z.string(),
  sectionName: z.string().optional(),
});

export const NamespaceSchema = z.looseObject({
  metadata: ObjectMetaSchema,
});

export const L34RouteSchema = kubeObject({
  spec: z
    .looseObject({
      parentRefs: z.array(ParentRefSchema).default([]),
      destinationCIDRs: z.array(z.string()).default([]),
    })
    .prefault({}),
});

export const EnvVarSchema = z.looseObject({
  name: z.string(),
  value: z.string().optional(),
  valueFrom: z
    .looseObject({
      fieldRef: z
        .looseObject({
          apiVersion: z.string().optional(),
          fieldPath: z.string(),
        })
        .optional(),
    })
    .optional(),
});

export const ContainerSchema = z.looseObject({
  name: z.string(),
  image: z.string().optional(),
  env: z.array(EnvVarSchema).optional(),
  resources: ResourceRequirementsSchema.optional(),
  resizePolicy: z.array(ResizePolicySchema).optional(),
});

export const PodAffinityTermSchema = z.looseObject({
  labelSelector: LabelSelectorSchema.optional(),
  topologyKey: z.string().optional(),
});

export const PodAntiAffinitySchema = z.looseObject({
  requiredDuringSchedulingIgnoredDuringExecution: z.array(PodAffinityTermSchema).optional(),
  preferredDuringSchedulingIgnoredDuringExecution: z
    .array(z.looseObject({ weight: z.number(), podAffinityTerm: PodAffinityTermSchema }))
    .optional(),
});

export const PodSpecSchema = z.looseObject({
  containers: z.array(ContainerSchema),
  initContainers: z.array(ContainerSchema).optional(),
  serviceAccountName: z.string().optional(),
  // Deprecated alias the API server still fills in from serviceAccountName.
  serviceAccount: z.string().optional(),
  affinity: z.looseObject({ podAntiAffinity: PodAntiAffinitySchema.optional() }).optional(),
  readinessGates: z.array(z.looseObject({ conditionType: z.string() })).optional(),
});

export const PodTemplateSpecSchema = z.looseObject({
  metadata: z
    .looseObject({
      labels: StringMap.optional(),
      annotations: StringMap.optional(),
    })
    .optional(),
  spec: PodSpecSchema,
});

export const DeploymentSchema = kubeObject({
  spec: z.looseObject({
    replicas: z.number().int().optional(),
    selector: LabelSelectorSchema.optional(),
    template: PodTemplateSpecSchema,
  }),
  status: z
    .looseObject({
      observedGeneration: z.number().int().optional(),
      replicas: z.number().int().optional(),
      readyReplicas: z.number().int().optional(),
      availableReplicas: z.number().int().optional(),
      updatedReplicas: z.number().int().optional(),
      // The Deployment controller's own (not metav1.Condition): the rollout
      // budget reads Progressing's reason.
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string(), reason: z.string().optional() })).optional(),
    })
    .optional(),
});

// policy/v1 PodDisruptionBudget, as the opt-in PDB of an LB Deployment reads
// it: only the fields the controller owns are typed (render-pdb.ts).
export const PodDisruptionBudgetSchema = kubeObject({
  spec: z
    .looseObject({
      selector: LabelSelectorSchema.optional(),
      maxUnavailable: z.union([z.number().int(), z.string()]).optional(),
      minAvailable: z.union([z.number().int(), z.string()]).optional(),
    })
    .default({}),
});

export type OwnerReference = z.infer<typeof OwnerReferenceSchema>;
export type PodDisruptionBudget = z.infer<typeof PodDisruptionBudgetSchema>;
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;
export type Condition = z.infer<typeof ConditionSchema>;
export type GatewayAddress = z.infer<typeof GatewayAddressSchema>;
export type Gateway = z.infer<typeof GatewaySchema>;
export type GatewayClass = z.infer<typeof GatewayClassSchema>;
export type Listener = z.infer<typeof ListenerSchema>;
export type Quantity = z.infer<typeof QuantitySchema>;
export type ResourceRequirements = z.infer<typeof ResourceRequirementsSchema>;
export type ResizePolicy = z.infer<typeof ResizePolicySchema>;
export type NetworkAttachment = z.infer<typeof NetworkAttachmentSchema>;
export type InternalSubnet = z.infer<typeof InternalSubnetSchema>;
export type ContainerArgs = z.infer<typeof ContainerArgsSchema>;
export type GatewayConfiguration = z.infer<typeof GatewayConfigurationSchema>;
export type ParentRef = z.infer<typeof ParentRefSchema>;
export type L34Route = z.infer<typeof L34RouteSchema>;
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;
export type EnvVar = z.infer<typeof EnvVarSchema>;
export type Container = z.infer<typeof ContainerSchema>;
export type PodAffinityTerm = z.infer<typeof PodAffinityTermSchema>;
export type PodSpec = z.infer<typeof PodSpecSchema>;
export type PodTemplateSpec = z.infer<typeof PodTemplateSpecSchema>;
export type Deployment = z.infer<typeof DeploymentSchema>;
export type Namespace = z.infer<typeof NamespaceSchema>;
