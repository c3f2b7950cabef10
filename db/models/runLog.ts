import { CreationOptional, DataTypes, InferAttributes, InferCreationAttributes, Model, Sequelize } from 'sequelize';

/** Execution metadata of one run: never any transcript content. */
export class RunLog extends Model<InferAttributes<RunLog>, InferCreationAttributes<RunLog>> {
  declare id: CreationOptional<number>;
  declare publicId: string;
  declare workspaceId: number;
  declare runId: number;
  declare status: string;
  declare latencyMs: number;
  declare model: string;
  declare inputTokens: number;
  declare outputTokens: number;
  declare totalTokens: number;
  declare cachedTokens: number;
  declare toolNames: string[];
  declare errorCode: CreationOptional<string | null>;
  declare createdAt: CreationOptional<Date>;

  static setup(sequelize: Sequelize): void {
    RunLog.init(
      {
        id: { type: DataTypes.BIGINT, autoIncrement: true, primaryKey: true },
        publicId: { type: DataTypes.TEXT, allowNull: false },
        workspaceId: { type: DataTypes.BIGINT, allowNull: false },
        runId: { type: DataTypes.BIGINT, allowNull: false },
        status: { type: DataTypes.TEXT, allowNull: false },
        latencyMs: { type: DataTypes.INTEGER, allowNull: false },
        model: { type: DataTypes.TEXT, allowNull: false },
        inputTokens: { type: DataTypes.INTEGER, allowNull: false },
        outputTokens: { type: DataTypes.INTEGER, allowNull: false },
        totalTokens: { type: DataTypes.INTEGER, allowNull: false },
        cachedTokens: { type: DataTypes.INTEGER, allowNull: false },
        toolNames: { type: DataTypes.ARRAY(DataTypes.TEXT), allowNull: false, defaultValue: [] },
        errorCode: DataTypes.TEXT,
        createdAt: DataTypes.DATE,
      },
      { sequelize, tableName: 'run_logs', underscored: true, updatedAt: false },
    );
  }
}
