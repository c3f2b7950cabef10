import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';
import type { RunStatus } from '../../domain/errors';
import type { OutputItem, RunKind } from '../../domain/runs';
import type { Usage } from '../../domain/usage';

export class Run extends Model<InferAttributes<Run>, InferCreationAttributes<Run>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare agentId: number;
  declare agentVersion: number;
  declare conversationId: CreationOptional<number | null>;
  declare kind: RunKind;
  declare status: RunStatus;
  declare channel: CreationOptional<string>;
  declare requestId: string;
  declare traceId: string;
  declare metadata: CreationOptional<Record<string, unknown>>;
  /** Null for stateless /responses runs, which keep no copy of the exchange. */
  declare output: CreationOptional<OutputItem[] | null>;
  declare usage: CreationOptional<Usage>;
  declare consumedUsage: CreationOptional<Usage | null>;
  declare resourceId: CreationOptional<string | null>;
  declare errorCode: CreationOptional<string | null>;
  declare errorMessage: CreationOptional<string | null>;
  declare createdAt: CreationOptional<Date>;
  declare startedAt: CreationOptional<Date | null>;
  declare completedAt: CreationOptional<Date | null>;

  static setup(sequelize: Sequelize): void {
    Run.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        agentId: { type: DataTypes.BIGINT, allowNull: false },
        agentVersion: { type: DataTypes.INTEGER, allowNull: false },
        conversationId: DataTypes.BIGINT,
        kind: { type: DataTypes.TEXT, allowNull: false },
        status: { type: DataTypes.TEXT, allowNull: false },
        channel: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
        requestId: { type: DataTypes.TEXT, allowNull: false },
        traceId: { type: DataTypes.TEXT, allowNull: false },
        metadata: { type: DataTypes.JSONB, allowNull: false, defaultValue: {} },
        output: DataTypes.JSONB,
        usage: { type: DataTypes.JSONB, allowNull: false, defaultValue: { input_tokens: 0, output_tokens: 0, total_tokens: 0, cached_tokens: 0 } },
        resourceId: DataTypes.TEXT,
        consumedUsage: DataTypes.JSONB,
        errorCode: DataTypes.TEXT,
        errorMessage: DataTypes.TEXT,
        createdAt: DataTypes.DATE,
        startedAt: DataTypes.DATE,
        completedAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'runs', underscored: true, updatedAt: false },
    );
  }
}
