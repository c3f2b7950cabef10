import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

/** One idempotency claim and, once its request finished, the response it replays. */
export class IdempotencyKey extends Model<InferAttributes<IdempotencyKey>, InferCreationAttributes<IdempotencyKey>> {
  declare id: CreationOptional<number>;
  declare scopeHash: string;
  declare endpoint: string;
  declare apiKeyId: number;
  declare fingerprint: string;
  declare state: 'in_flight' | 'completed';
  declare claimToken: string;
  declare kind: CreationOptional<'body' | 'stream' | null>;
  declare runPublicId: CreationOptional<string | null>;
  declare responseStatus: CreationOptional<number | null>;
  declare responseHeaders: CreationOptional<Record<string, string> | null>;
  declare responseBody: CreationOptional<Buffer | null>;
  declare createdAt: Date;
  declare completedAt: CreationOptional<Date | null>;
  declare expiresAt: Date;

  static setup(sequelize: Sequelize): void {
    IdempotencyKey.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        scopeHash: { type: DataTypes.TEXT, allowNull: false },
        endpoint: { type: DataTypes.TEXT, allowNull: false },
        apiKeyId: { type: DataTypes.BIGINT, allowNull: false },
        fingerprint: { type: DataTypes.TEXT, allowNull: false },
        state: { type: DataTypes.TEXT, allowNull: false },
        claimToken: { type: DataTypes.UUID, allowNull: false },
        kind: DataTypes.TEXT,
        runPublicId: DataTypes.TEXT,
        responseStatus: DataTypes.INTEGER,
        responseHeaders: DataTypes.JSONB,
        responseBody: DataTypes.BLOB,
        createdAt: { type: DataTypes.DATE, allowNull: false },
        completedAt: DataTypes.DATE,
        expiresAt: { type: DataTypes.DATE, allowNull: false },
      },
      // Timestamps come from the service's injectable clock, never Sequelize's.
      { sequelize, tableName: 'idempotency_keys', underscored: true, timestamps: false },
    );
  }
}
